package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// A ledger that cannot make rows durable (here: its journal's lock file
// deleted while serving, as a whole directory deleted would) is noticed
// within a check: answers in flight are withheld and charged nothing,
// new billable requests get 503 ledger_unavailable in their dialect
// without reaching a provider, and readiness and metrics say why.
func TestLedgerUnavailable(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	h.fault("primary", "tokens=10;event_delay=40ms")

	type answer struct {
		status int
		body   string
		id     string
	}
	var wg sync.WaitGroup
	results := make([]answer, 2)
	started := make(chan struct{}, 2)
	for i, stream := range []bool{false, true} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"}],"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			resp, err := h.post("/v1/chat/completions", body)
			if err != nil {
				t.Error(err)
				started <- struct{}{}
				return
			}
			defer resp.Body.Close()
			if stream {
				// Committed: the first event is here; the ledger goes now.
				br := bufio.NewReader(resp.Body)
				line, _ := br.ReadString('\n')
				started <- struct{}{}
				rest, _ := io.ReadAll(br)
				results[i] = answer{resp.StatusCode, line + string(rest), resp.Header.Get("X-Request-Id")}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			results[i] = answer{resp.StatusCode, string(b), resp.Header.Get("X-Request-Id")}
		}()
	}
	<-started // the stream is committed; the whole answer is being assembled
	if err := os.Remove(h.dbPath + ".journal.lock"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.writer.Unavailable() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the deleted file was not noticed within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()

	whole, streamed := results[0], results[1]
	if whole.status != http.StatusServiceUnavailable || !strings.Contains(whole.body, `"ledger_unavailable"`) || strings.Contains(whole.body, "choices") {
		t.Errorf("whole answer in flight: %d %s; want it withheld with 503 ledger_unavailable", whole.status, whole.body)
	}
	if !strings.Contains(streamed.body, "ledger_unavailable") || strings.Contains(streamed.body, "[DONE]") {
		t.Errorf("stream in flight ended with:\n%s\nwant a ledger_unavailable error event and no [DONE]", streamed.body)
	}
	for _, a := range []answer{whole, streamed} {
		n, row, atts := h.rows(t, a.id)
		if n != 1 || row.cost != 0 || row.failureClass != "ledger_unavailable" || row.status == "ok" {
			t.Errorf("request %s: %d rows, %+v; want one uncharged row failed as ledger_unavailable", a.id, n, row)
		}
		for _, at := range atts {
			if at.cost != 0 {
				t.Errorf("request %s: an attempt charged %d", a.id, at.cost)
			}
		}
	}

	// New billable requests: refused before any work, in their dialect.
	before := h.counts()["primary"]
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"}]}`, `"code":"ledger_unavailable"`},
		{"/v1/messages", `{"model":"` + publicModel + `","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, `"type":"error"`},
		{"/v1/responses", `{"model":"` + publicModel + `","input":"hi"}`, `"code":"ledger_unavailable"`},
	} {
		resp, err := h.post(tc.path, tc.body, "anthropic-version", "2023-06-01")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), tc.want) ||
			!strings.Contains(string(b), "ledger") || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s while the ledger is unavailable: %d %s (Retry-After %q)", tc.path, resp.StatusCode, b, resp.Header.Get("Retry-After"))
		}
	}
	if after := h.counts()["primary"]; after != before {
		t.Errorf("the provider was called %d times while the ledger was unavailable", after-before)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(h.gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Status, Reason string }
		json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || got.Status != "unavailable" || got.Reason != "ledger_files_gone" {
			t.Errorf("%s: %d %+v; want 503 unavailable, ledger_files_gone", path, resp.StatusCode, got)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `spillway_ledger_available{reason="ledger_files_gone"} 0`) {
		t.Errorf("metrics do not say the ledger is unavailable:\n%s", grepLines(string(b), "spillway_ledger_available"))
	}
}

// A healthy gateway is ready.
func TestReadyWhenTheLedgerIsWell(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(h.gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != `{"status":"ok"}` {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
