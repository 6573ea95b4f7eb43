package adversarial

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/mock"
)

// TestDeletedLedger deletes the ledger's files under a serving gateway (its
// own process: the case destroys the ledger). Within 3s /readyz says why it
// is not ready, and a billable request is refused with 503
// ledger_unavailable without reaching the provider.
func TestDeletedLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	m, err := mock.New("openai", mock.Options{Name: "solo"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(func() { m.Close(); srv.CloseClientConnections(); srv.Close() })
	s := &suite{g: startGateway(t, `ledger: {path: DIR/ledger/ledger.db}
deployments:
  - {id: solo, provider: openai, base_url: `+srv.URL+`, model: m, `+priced+`}
pools: [{id: solo, model: solo, deployments: [solo]}]
routes: [{model: solo, pool: solo}]
`)}
	t.Cleanup(client.CloseIdleConnections)
	g := s.g
	s.run(t, []attack{{"storage/deleted_ledger", 15 * time.Second, 64 * mib, func(t *testing.T) {
		if r := g.chat(t, "solo", false, 20); r.status != http.StatusOK || r.trail() != "solo=ok" {
			t.Fatalf("before: %s", r)
		}
		dir := filepath.Join(g.dir, "ledger")
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, de := range entries {
			names = append(names, de.Name())
			if err := os.Remove(filepath.Join(dir, de.Name())); err != nil {
				t.Fatal(err)
			}
		}
		deleted := time.Now()
		var r *reply
		waitFor(t, 5*time.Second, "/readyz to say the ledger is gone", func() bool {
			r = g.do(t, http.MethodGet, "/readyz", "", "")
			return r.status != http.StatusOK
		})
		noticed := time.Since(deleted)
		if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"reason":"ledger_files_gone"`) || noticed > 3*time.Second {
			t.Errorf("/readyz %v after deleting %v: %s", noticed.Round(time.Millisecond), names, r)
		}
		if h := g.do(t, http.MethodGet, "/healthz", "", ""); h.status != http.StatusServiceUnavailable {
			t.Errorf("/healthz: %s", h)
		}
		before := m.Count()
		for _, stream := range []bool{false, true} {
			r := g.chat(t, "solo", stream, 20)
			if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "ledger_unavailable") {
				t.Errorf("stream %v: %s", stream, r)
			}
		}
		if c := m.Count(); c != before {
			t.Errorf("the provider saw %d requests after the ledger was gone", c-before)
		}
		t.Logf("deleted %v; /readyz said %s after %v", names, r.body, noticed.Round(time.Millisecond))
	}}})
	s.report(t)
	if t.Failed() {
		t.Logf("gateway stderr (tail):\n%s", tail(g.errs.String(), 20000))
	}
}
