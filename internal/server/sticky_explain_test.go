package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

// orderState is a state of the world for explaining stickiness and
// ranking: a config of the three-rung pool (primary openai, secondary
// anthropic, tertiary gemini), what happened before (a conversation's
// first turn, with some rungs down), and the request explained.
type orderState struct {
	name      string
	edit      func(*catalog.Config)
	down      []string // rungs failing during the first turn
	system    string   // the conversation's system prompt
	residency string   // of the request explained
}

// turnBody is a Chat body of the conversation's n-th turn.
func turnBody(system string, n int) string {
	msgs := []map[string]string{{"role": "system", "content": system}}
	for i := 1; i <= n; i++ {
		if i > 1 {
			msgs = append(msgs, map[string]string{"role": "assistant", "content": "An answer."})
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": "Question?"})
	}
	b, _ := json.Marshal(map[string]any{"model": publicModel, "max_tokens": 16, "messages": msgs})
	return string(b)
}

func orderStates() []orderState {
	price := func(in, out, cached float64) *catalog.Price {
		return &catalog.Price{InputPerMTok: in, OutputPerMTok: out, CachedInputPerMTok: cached}
	}
	return []orderState{
		{name: "sticky: pinned to the secondary", down: []string{"primary"}},
		{name: "sticky: the pinned rung gated", down: []string{"primary"}, residency: "eu", edit: func(c *catalog.Config) {
			c.Deployments[0].Residency, c.Deployments[1].Residency, c.Deployments[2].Residency = "eu", "us", "eu"
		}},
		{name: "rank: by cost", edit: func(c *catalog.Config) {
			ranked(c)
			c.Deployments[1].Price, c.Deployments[2].Price = price(1, 5, 0), price(2, 10, 0)
		}},
		{name: "rank: the cache holder", down: []string{"primary", "secondary"}, system: strings.Repeat("Policy text. ", 1300), edit: func(c *catalog.Config) {
			ranked(c)
			off := false
			c.Routes[0].Sticky.Enabled = &off
			c.Deployments[0].Price, c.Deployments[1].Price, c.Deployments[2].Price = price(1, 15, 0), price(1, 15, 0), price(3, 15, 0.1)
		}},
		{name: "rank: sticky first", down: []string{"secondary", "tertiary"}, edit: func(c *catalog.Config) {
			ranked(c)
			c.Deployments[1].Price, c.Deployments[2].Price = price(2, 10, 0), price(1, 5, 0)
		}},
	}
}

// harness runs the conversation's first turn with st.down failing, then
// heals them.
func (st *orderState) harness(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarnessWith(t, st.edit, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"}, rungSpec{"tertiary", "gemini"})
	system := st.system
	if system == "" {
		system = "You are terse."
	}
	if len(st.down) > 0 {
		for _, id := range st.down {
			h.fault(id, "status=503")
		}
		resp, err := h.post("/v1/chat/completions", turnBody(system, 1))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("first turn: %v %v", resp.Status, err)
		}
		resp.Body.Close()
		for _, id := range st.down {
			h.fault(id, "")
		}
	}
	return h, turnBody(system, 2)
}

func (st *orderState) explain(t *testing.T, h *harness, body string) (server.Explanation, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/admin/explain?org=acme&team=search&residency="+st.residency, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("explain: %d %s", resp.StatusCode, b)
	}
	var ex server.Explanation
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return ex, b
}

// measured stands for a latency the run measured, in golden files.
var measured = regexp.MustCompile(`"first_token_p50_ms": \d+`)

// TestExplainStickyRank pins what explain prints of stickiness and
// ranking, and checks that it is what the server does: every rung then
// made to fail, the server tries them in the order explain gave.
func TestExplainStickyRank(t *testing.T) {
	for _, st := range orderStates() {
		t.Run(st.name, func(t *testing.T) {
			h, body := st.harness(t)
			ex, _ := st.explain(t, h, body)
			got, _ := json.MarshalIndent(ex, "", "  ")
			got = append(measured.ReplaceAll(got, []byte(`"first_token_p50_ms": "measured"`)), '\n')
			file := filepath.Join("testdata", "explain", strings.NewReplacer(" ", "_", ":", "", ",", "").Replace(st.name)+".json")
			if *updateExplain {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test -run TestExplainStickyRank -update-explain writes it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("explain differs from %s:\n%s", file, got)
			}
			// Explain is execution.
			for _, id := range []string{"primary", "secondary", "tertiary"} {
				h.fault(id, "status=503")
			}
			resp, err := h.post("/v1/chat/completions", body, "X-Spillway-Residency", st.residency)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var tried []string
			for _, hop := range strings.Split(hdr(resp, "X-Spillway-Trail"), ", ") {
				if id, _, ok := strings.Cut(hop, "="); ok {
					tried = append(tried, id)
				}
			}
			if strings.Join(tried, ",") != strings.Join(ex.Order, ",") {
				t.Errorf("explain planned %v; the server tried %v", ex.Order, tried)
			}
		})
	}
}

// Explain finds a conversation by its header too, or by ?conversation=.
func TestExplainConversationHeader(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "status=503")
	resp, err := h.post("/v1/chat/completions", turnBody("s", 1), "X-Spillway-Conversation", "c-1")
	if err != nil || hdr(resp, "X-Spillway-Deployment") != "secondary" {
		t.Fatalf("first turn: %v %q", err, hdr(resp, "X-Spillway-Deployment"))
	}
	resp.Body.Close()
	h.fault("primary", "")
	for _, ex := range []server.Explanation{
		explain(t, h, http.MethodPost, "", turnBody("other", 1), "X-Spillway-Conversation", "c-1"),
		explain(t, h, http.MethodGet, "?model="+publicModel+"&conversation=c-1", ""),
	} {
		if ex.Sticky != "secondary" || strings.Join(ex.Order, ",") != "secondary,primary" || !ex.Rungs[1].Sticky {
			t.Errorf("explain: sticky %q order %v", ex.Sticky, ex.Order)
		}
	}
	if ex := explain(t, h, http.MethodGet, "?model="+publicModel+"&conversation=c-2", ""); ex.Sticky != "" || ex.Pin != "" {
		t.Errorf("another conversation: pin %q sticky %q", ex.Pin, ex.Sticky)
	}
}
