package server_test

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

var updateExplain = flag.Bool("update-explain", false, "rewrite testdata/explain/*.json from this run")

// routingState is one state of the world for the explain tests: the
// config, what health has seen, and the request's attributes.
type routingState struct {
	name string
	// edit changes the config of a three-rung pool (primary openai,
	// secondary anthropic, tertiary gemini).
	edit func(*catalog.Config)
	// fail is the rungs made to fail twice before planning (their
	// circuits open).
	fail []string
	// headers are sent with the request (and given to explain as query
	// parameters).
	residency, workload string
	body                string // a Chat body; default a plain hello
	// warm is how many requests are served before planning (exercise
	// turns taken).
	warm int
}

func routingStates() []routingState {
	return []routingState{
		{name: "all healthy"},
		{name: "primary open", fail: []string{"primary"}},
		{name: "every rung open: last resort", fail: []string{"primary", "secondary", "tertiary"}},
		{name: "residency gate", residency: "eu", edit: func(c *catalog.Config) {
			c.Deployments[0].Residency, c.Deployments[1].Residency, c.Deployments[2].Residency = "us", "eu", "eu"
		}},
		{name: "tenant deny", edit: func(c *catalog.Config) { c.Deployments[1].Tenants.Deny = []string{"acme"} }},
		{name: "declared capability", body: `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`,
			edit: func(c *catalog.Config) { no := false; c.Deployments[0].Capabilities.Tools = &no }},
		{name: "workload route", workload: "extraction", edit: func(c *catalog.Config) {
			c.Pools = append(c.Pools, catalog.Pool{ID: "extract", Model: exactModel, Deployments: []string{"tertiary"}})
			c.Routes = append([]catalog.Route{{Model: publicModel, Match: catalog.RouteMatch{Workload: "extraction"}, Pool: "extract"}}, c.Routes...)
		}},
		{name: "own pool open: fallback model", fail: []string{"primary", "secondary"}, edit: func(c *catalog.Config) {
			c.Pools[0].Deployments = c.Pools[0].Deployments[:2]
			c.Pools = append(c.Pools, catalog.Pool{ID: "other", Model: otherModel, Deployments: []string{"tertiary"}})
			c.Routes[0].Fallback = catalog.RouteFallback{Pool: "other", AllowModelChange: true}
		}},
		{name: "exercise turn", warm: 4, edit: func(c *catalog.Config) { c.Routes[0].Exercise = 0.2 }},
	}
}

func (st *routingState) harness(t *testing.T) *harness {
	t.Helper()
	h := newHarnessWith(t, st.edit, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"}, rungSpec{"tertiary", "gemini"})
	for _, id := range st.fail {
		h.fault(id, "status=503")
	}
	others := map[string]bool{}
	for _, id := range st.fail {
		others[id] = true
	}
	for _, id := range []string{"primary", "secondary", "tertiary"} {
		if !others[id] {
			h.fault(id, "")
		}
	}
	for range st.warm {
		served(t, h, false)
	}
	if len(st.fail) > 0 {
		for range 2 {
			chat(t, h, false, hello())
		}
		for _, id := range st.fail {
			if got := stateOf(t, h, id); got != "open" {
				t.Fatalf("%s is %s, want open", id, got)
			}
		}
	}
	return h
}

func (st *routingState) explain(t *testing.T, h *harness) server.Explanation {
	t.Helper()
	url := h.gw.URL + "/v1/admin/explain?org=acme&team=search&residency=" + st.residency + "&workload=" + st.workload
	body := st.body
	if body == "" {
		body = `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
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
	return ex
}

// TestExplainIsExecution is the property the one selection module buys:
// for each state, the rungs explain says would be tried are the rungs the
// server tries, in that order (every rung made to fail, so each is tried),
// and a last-resort probe goes where explain said.
func TestExplainIsExecution(t *testing.T) {
	for _, st := range routingStates() {
		t.Run(st.name, func(t *testing.T) {
			h := st.harness(t)
			ex := st.explain(t, h)
			want := ex.Order
			if ex.LastResort != "" {
				want = []string{ex.LastResort}
			}
			if len(want) == 0 {
				t.Fatalf("explain plans nothing: %+v", ex)
			}
			for _, id := range []string{"primary", "secondary", "tertiary"} {
				h.fault(id, "status=503")
			}
			body := st.body
			if body == "" {
				body = `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
			}
			resp, err := h.post("/v1/chat/completions", body, "X-Spillway-Residency", st.residency, "X-Spillway-Workload", st.workload)
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
			if strings.Join(tried, ",") != strings.Join(want, ",") {
				t.Errorf("explain planned %v; the server tried %v (trail %q)", want, tried, hdr(resp, "X-Spillway-Trail"))
			}
		})
	}
}

// TestExplainGolden pins what explain prints for each state.
func TestExplainGolden(t *testing.T) {
	for _, st := range routingStates() {
		t.Run(st.name, func(t *testing.T) {
			h := st.harness(t)
			ex := st.explain(t, h)
			got, _ := json.MarshalIndent(ex, "", "  ")
			got = append(got, '\n')
			file := filepath.Join("testdata", "explain", strings.ReplaceAll(st.name, " ", "_")+".json")
			file = strings.ReplaceAll(strings.ReplaceAll(file, ":", ""), ",", "")
			if *updateExplain {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test -run TestExplainGolden -update-explain writes it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("explain differs from %s:\n%s", file, got)
			}
		})
	}
}

// Every rung a plan drops is counted with its gate, so a dashboard shows
// why traffic skips a deployment.
func TestDroppedRungsMetric(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) { c.Deployments[1].Tenants.Deny = []string{"acme"} },
		rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	for range 3 {
		served(t, h, false)
	}
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `spillway_rungs_dropped_total{deployment="secondary",reason="tenant_denied",route="` + publicModel + `"} 3`
	if !strings.Contains(string(b), want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(string(b), "rungs_dropped"))
	}
}
