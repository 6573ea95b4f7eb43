package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/accesslog"
	"github.com/spillway-gw/spillway/internal/server"
)

// TestAccessLogSampled: with log.access {ok: 0, client_error: 0, error:
// 1} the access log keeps only the failed request's line, over real HTTP;
// the metrics still count every request. Unsampled (every rate 1) keeps
// every line, as before sampling existed.
func TestAccessLogSampled(t *testing.T) {
	cases := []struct {
		name    string
		sampler *accesslog.Sampler
		want    []string // outcomes whose lines are written, in order
	}{
		{"errors only", accesslog.New(0, 0, 1), []string{`"status":502`}},
		{"client errors only", accesslog.New(0, 1, 0), []string{`"status":401`}},
		{"every line", accesslog.New(1, 1, 1), []string{`"status":200`, `"status":401`, `"status":502`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := &syncBuffer{}
			h := newHarnessOpts(t, nil, func(o *server.Options) {
				o.AccessLog = lines
				o.AccessSample = c.sampler
			}, rungSpec{"primary", "openai"})
			if r := chat(t, h, false, hello()); r.err != nil {
				t.Fatalf("ok request: %v", r.err)
			}
			req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions", strings.NewReader(`{"model":"x","messages":[]}`))
			req.Header.Set("Authorization", "Bearer sk-wrong")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong key: %d, want 401", resp.StatusCode)
			}
			h.fault("primary", "status=503")
			if r := chat(t, h, false, hello()); r.err == nil {
				t.Fatal("a failing provider answered")
			}
			got := strings.Split(strings.TrimSpace(lines.String()), "\n")
			if lines.String() == "" {
				got = nil
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d access lines, want %d:\n%s", len(got), len(c.want), lines.String())
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d = %s, want %s", i, got[i], w)
				}
			}
			_, m := adminGet(t, h, "/metrics", adminKey)
			if !strings.Contains(string(m), `outcome="ok"`) {
				t.Errorf("the sampled-out ok request is missing from the metrics")
			}
		})
	}
}
