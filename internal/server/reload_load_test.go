package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

// TestHotReloadUnderLoad swaps the routing file 20 times while 1,000
// concurrent requests run: none is lost, and each is served wholly by
// the snapshot it started on (version A routes to deployment a, version B
// to b; the answer names its version and its deployment, and every hop of
// its trail belongs to that version).
func TestHotReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 requests")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "spillway.yaml")
	var holder *catalog.Holder
	var files [2][]byte
	// Load, not the providers, is under test: bounds generous enough for
	// 1,000 requests on two cores under -race, circuits that do not open.
	// The provider answers each request's first event at once, then holds
	// the rest until release: every request stays in flight until all
	// 1,000 have started, across every swap.
	release := make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\ndata: [DONE]\n\n")
	}))
	defer held.Close()
	relax := func(c *catalog.Config) {
		for i := range c.Deployments {
			c.Deployments[i].BaseURL = held.URL
			c.Deployments[i].Timeouts = catalog.Timeouts{FirstByte: catalog.Duration(time.Minute), Idle: catalog.Duration(time.Minute), Total: catalog.Duration(2 * time.Minute)}
			c.Deployments[i].Health.FailureThreshold = 1 << 30
		}
	}
	h := newHarnessOpts(t, relax, func(o *server.Options) {
		base := o.Catalog.Load().Config().Clone()
		for i, dep := range []string{"a", "b"} {
			c := base.Clone()
			c.Pools = []catalog.Pool{{ID: "p-" + dep, Model: exactModel, Deployments: []string{dep}}}
			c.Routes = []catalog.Route{{Model: publicModel, Pool: "p-" + dep}}
			b, err := yaml.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			files[i] = b
		}
		if err := os.WriteFile(path, files[0], 0o600); err != nil {
			t.Fatal(err)
		}
		snap, err := catalog.LoadSnapshot(path)
		if err != nil {
			t.Fatal(err)
		}
		holder = catalog.NewHolder(snap)
		o.Catalog = holder
	}, rungSpec{"a", "openai"}, rungSpec{"b", "openai"})

	version := map[string]string{} // version -> the deployment it routes to
	for i, dep := range []string{"a", "b"} {
		if err := os.WriteFile(path, files[i], 0o600); err != nil {
			t.Fatal(err)
		}
		snap, err := catalog.LoadSnapshot(path)
		if err != nil {
			t.Fatal(err)
		}
		version[snap.Version()] = dep
	}
	if err := holder.Reload(path); err != nil { // now at b; the swaps alternate
		t.Fatal(err)
	}

	const requests, swaps = 1000, 20
	// The launcher swaps the file after every slice of launches, while
	// the earlier slices are still in flight on the old snapshot.
	swap := func(i int) {
		if err := os.WriteFile(path, files[i%2], 0o600); err != nil {
			t.Error(err)
			return
		}
		if err := holder.Reload(path); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	var lost, mixed atomic.Int32
	seen := make([]atomic.Int32, 2)
	// one sends request i, calling headers once its answer's headers are in.
	one := func(i int, headers func()) {
		stream := i%4 != 0
		body := `{"model":"` + publicModel + `","max_tokens":128,"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"hi"}]}`
		resp, err := h.post("/v1/chat/completions", body)
		if stream {
			headers()
		}
		if err != nil {
			lost.Add(1)
			t.Errorf("request %d: %v", i, err)
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || (stream && !strings.Contains(string(b), "[DONE]")) {
			lost.Add(1)
			t.Errorf("request %d: %d %v %.200s", i, resp.StatusCode, err, b)
			return
		}
		v := resp.Header.Get("X-Spillway-Config")
		dep, ok := version[v]
		if !ok || resp.Header.Get("X-Spillway-Deployment") != dep || resp.Header.Get("X-Spillway-Trail") != dep+"=ok" {
			mixed.Add(1)
			t.Errorf("request %d: config %q (routes to %q) but served by %q, trail %q", i, v, dep,
				resp.Header.Get("X-Spillway-Deployment"), resp.Header.Get("X-Spillway-Trail"))
			return
		}
		if dep == "a" {
			seen[0].Add(1)
		} else {
			seen[1].Add(1)
		}
	}
	// Waves of about 48: the next wave starts, and the file is swapped,
	// once half of this wave's streams have their headers (planned, and
	// streaming), so every swap lands among requests in flight.
	var inFlightAtSwap, inFlight, peak atomic.Int32
	const wave = requests / (swaps + 1)
	for i := 0; i < requests; {
		n := min(wave, requests-i)
		streams := 0
		for j := range n {
			if (i+j)%4 != 0 {
				streams++
			}
		}
		var answered sync.WaitGroup
		answered.Add(streams / 2)
		var once atomic.Int32
		for j := range n {
			k := i + j
			wg.Add(1)
			if n := inFlight.Add(1); n > peak.Load() {
				peak.Store(n)
			}
			go func() {
				defer wg.Done()
				defer inFlight.Add(-1)
				one(k, func() {
					if once.Add(1) <= int32(streams/2) {
						answered.Done()
					}
				})
			}()
		}
		i += n
		answered.Wait()
		if sw := i/wave - 1; sw < swaps && i < requests {
			inFlightAtSwap.Add(inFlight.Load())
			swap(sw)
		}
	}
	// Every request has started (the streams' headers are in); let them
	// all finish.
	close(release)
	wg.Wait()
	if st := holder.Status(); st.Applied < swaps {
		t.Errorf("%d reloads applied, want %d", st.Applied, swaps)
	}
	t.Logf("%d requests, %d swaps (%d in flight at once at the peak, %d across the swaps): %d on a, %d on b, %d lost, %d mixed",
		requests, swaps, peak.Load(), inFlightAtSwap.Load(), seen[0].Load(), seen[1].Load(), lost.Load(), mixed.Load())
	if peak.Load() < requests*9/10 {
		t.Errorf("at most %d requests were in flight at once, want about all %d", peak.Load(), requests)
	}
	if inFlightAtSwap.Load() < swaps {
		t.Errorf("only %d requests were in flight across the swaps: the test did not test", inFlightAtSwap.Load())
	}
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Errorf("the swaps never split the traffic: a %d, b %d", seen[0].Load(), seen[1].Load())
	}
}
