package idempotency_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/spillway-gw/spillway/internal/idempotency"
)

// A generation handler with idempotency in front: the first request with a
// key runs and is recorded, a retry replays it, a different body under the
// same key is refused.
func Example() {
	store := idempotency.New(idempotency.Options{})
	runs := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tenant := "vk-123" // the caller's virtual key, once authenticated
		c, err := store.Begin(r.Context(), tenant, r.Header.Get("Idempotency-Key"), idempotency.RequestHash(r.URL.Path, body))
		switch {
		case err != nil: // the caller left while waiting for the key's owner
			return
		case c.Replay != nil:
			_ = idempotency.Replay(w, c.Replay)
			return
		case c.Failed != nil:
			_ = idempotency.Replay(w, c.Failed)
			return
		case c.Refused != "":
			pub := c.Refused.Public()
			w.Header().Set(idempotency.HeaderShouldRetry, "false")
			http.Error(w, pub.Code, pub.Status) // the server writes it in the caller's dialect
			return
		}
		owner := c.Owner
		defer owner.Abandon() // fail closed on any path that did not decide
		rw := owner.Recorder(w)
		runs++
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(rw, "answer #%d", runs)
		owner.Complete(rw.Recording())
	}))
	defer srv.Close()

	post := func(key, body string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d replayed=%q %s\n", resp.StatusCode, resp.Header.Get(idempotency.HeaderReplayed), strings.TrimSpace(string(b)))
	}
	post("order-42", `{"q":1}`)
	post("order-42", `{"q":1}`)
	post("order-42", `{"q":2}`)
	post("order-43", `{"q":2}`)
	// Output:
	// 200 replayed="" answer #1
	// 200 replayed="true" answer #1
	// 409 replayed="" idempotency_key_reused
	// 200 replayed="" answer #2
}
