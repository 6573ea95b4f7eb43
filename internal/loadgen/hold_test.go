package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHoldRefusesBadOptions(t *testing.T) {
	for _, o := range []HoldOptions{
		{Target: Target{URL: "http://127.0.0.1:1/"}, During: func(int) {}},
		{Target: Target{URL: "http://127.0.0.1:1/"}, N: 3},
		{N: 3, During: func(int) {}},
	} {
		if _, err := Hold(context.Background(), o); !errors.Is(err, ErrOptions) {
			t.Errorf("Hold(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

// Hold opens every stream, calls During while they are all open, then
// cancels them and returns only after the server saw each one go.
func TestHoldKeepsStreamsOpenDuringTheCallback(t *testing.T) {
	var n, live atomic.Int64
	var handlers sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		switch n.Add(1) {
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case 2: // a stream that ends before it is held
			_, _ = w.Write([]byte("data: [DONE]\n\n"))
			return
		}
		live.Add(1)
		defer live.Add(-1)
		_, _ = w.Write([]byte("data: {}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	var during int
	res, err := Hold(context.Background(), HoldOptions{
		Target: Target{URL: srv.URL, Body: []byte(`{}`)},
		N:      7,
		During: func(open int) {
			during = open
			if got := live.Load(); got != 5 {
				t.Errorf("during the hold the server has %d streams open, want 5", got)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != 5 || res.Open != 5 || res.Streams != 7 || res.Failed["status_503"] != 1 {
		t.Fatalf("during %d, result %+v; want 5 open, one 503", during, res)
	}
	// The early stream may or may not have been seen ending before the
	// hold; it was never held either way.
	if res.Failed["ended"] > 1 {
		t.Errorf("result %+v", res)
	}
	handlers.Wait() // every handler returned: the streams were cancelled
}

func TestHoldGivesUpAfterReady(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never a first byte
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	res, err := Hold(context.Background(), HoldOptions{
		Target: Target{URL: srv.URL}, N: 2, Ready: 20 * time.Millisecond, During: func(int) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Open != 0 {
		t.Fatalf("result %+v; want none open", res)
	}
}
