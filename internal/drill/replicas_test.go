package drill

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Over several replicas, request i goes to replica i mod n and its
// Idempotency-Key retry to the next replica, so a replay is always
// answered by another replica than the original.
func TestSpreadOverReplicas(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]int{} // idempotency key -> replicas, in order
	var urls []string
	for i := range 3 {
		gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			k := r.Header.Get("Idempotency-Key")
			got[k] = append(got[k], i)
			mu.Unlock()
			http.Error(w, `{"error":{"message":"no","type":"invalid_request_error"}}`, http.StatusBadRequest)
		}))
		defer gw.Close()
		urls = append(urls, gw.URL+"/")
	}
	d := &driver{t: Target{BaseURLs: urls, Key: "k", Model: testModel, Rungs: testRungs()},
		cfg: Config{RequestTimeout: 10 * time.Second}, client: http.DefaultClient, bases: baseURLs(Target{BaseURLs: urls}), nonce: "n"}
	var buf []byte
	for i := range 4 {
		d.send(context.Background(), i, Shape{Dialect: Chat, MaxTokens: 16, Idem: true}, &buf)
	}
	for i, want := range [][]int{{0, 1}, {1, 2}, {2, 0}, {0, 1}} {
		k := "drill-n-" + string(rune('0'+i))
		if !slices.Equal(got[k], want) {
			t.Errorf("request %d went to replicas %v, want %v (the original, then the next for its retry)", i, got[k], want)
		}
	}
}
