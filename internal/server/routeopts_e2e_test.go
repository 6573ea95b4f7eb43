package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/server"
)

// otherModel is the fallback pool's exact model.
const otherModel = "gpt-4.1"

// withFallback moves the deployment "other" out of the route's pool into
// a pool of otherModel, priced higher, and names that pool as the route's
// fallback when allow is set.
func withFallback(allow bool) func(*catalog.Config) {
	return func(c *catalog.Config) {
		c.Pools[0].Deployments = slices.DeleteFunc(c.Pools[0].Deployments, func(id string) bool { return id == "other" })
		c.Pools = append(c.Pools, catalog.Pool{ID: "other-pool", Model: otherModel, Deployments: []string{"other"}})
		for i := range c.Deployments {
			if c.Deployments[i].ID == "other" {
				c.Deployments[i].Price = &catalog.Price{InputPerMTok: 10, OutputPerMTok: 60}
			}
		}
		if allow {
			c.Routes[0].Fallback = catalog.RouteFallback{Pool: "other-pool", AllowModelChange: true}
		}
	}
}

// requestRow is the ledger's request row fields this file checks.
type requestRow struct {
	exactModel, deployment string
	depth                  int
	reserved               int64
	exercise               bool
}

func (h *harness) requestRow(t *testing.T, id string) requestRow {
	t.Helper()
	var r requestRow
	if err := h.db(t).QueryRow(`SELECT exact_model, deployment, route_depth, reserved_micro_usd, exercise FROM requests WHERE request_id = ?`, id).
		Scan(&r.exactModel, &r.deployment, &r.depth, &r.reserved, &r.exercise); err != nil {
		t.Fatalf("request %s: %v", id, err)
	}
	return r
}

// answerModels reads the model field(s) an answer carries: the body's, or
// every streamed chunk's (OpenAI chunks, Anthropic's message_start).
func answerModels(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	var out []string
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var b struct{ Model string }
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
			t.Fatal(err)
		}
		return append(out, b.Model)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Model   string
			Message struct{ Model string }
		}
		if json.Unmarshal([]byte(data), &ev) == nil {
			if ev.Model != "" {
				out = append(out, ev.Model)
			}
			if ev.Message.Model != "" {
				out = append(out, ev.Message.Model)
			}
		}
	}
	return out
}

const chatBody = `{"model":"` + publicModel + `","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`

func streamBody(b string) string { return strings.Replace(b, `{"model"`, `{"stream":true,"model"`, 1) }

// Without allow_model_change, no request is ever served by another model:
// validation refuses the fallback, and at runtime a failing pool fails
// the request while the other model's deployment is never called.
func TestModelChangeNeedsConsent(t *testing.T) {
	t.Run("validation", func(t *testing.T) {
		h := newHarnessWith(t, withFallback(false), rungSpec{"primary", "openai"}, rungSpec{"other", "openai"})
		cfg := h.cfg.Clone()
		cfg.Routes[0].Fallback = catalog.RouteFallback{Pool: "other-pool"}
		if _, err := catalog.Build(cfg, "test.yaml"); err == nil || !strings.Contains(err.Error(), "allow_model_change") {
			t.Fatalf("a fallback without consent: %v", err)
		}
	})
	t.Run("runtime", func(t *testing.T) {
		h := newHarnessWith(t, withFallback(false), rungSpec{"primary", "openai"}, rungSpec{"other", "openai"})
		h.fault("primary", "status=503")
		for i, stream := range []bool{false, true, false, true, false} {
			body := chatBody
			if stream {
				body = streamBody(body)
			}
			resp, err := h.post("/v1/chat/completions", body)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				t.Fatalf("request %d served by %q (%s)", i, resp.Header.Get("X-Spillway-Deployment"), resp.Header.Get("X-Spillway-Model"))
			}
			if m := resp.Header.Get("X-Spillway-Model"); m != "" && m != exactModel {
				t.Errorf("request %d: model header %q", i, m)
			}
		}
		if n := h.mocks["other"].Count(); n != 0 {
			t.Errorf("the other model's deployment was called %d times", n)
		}
	})
}

// With allow_model_change, a failing pool falls back to the other model,
// and the answer (header and body, whole or streamed, in each dialect),
// the trail and the ledger all name the model that served; the
// reservation covers the pricier fallback rung; a healthy pool is never
// bypassed.
func TestModelChangeReported(t *testing.T) {
	h := newHarnessWith(t, withFallback(true), rungSpec{"primary", "openai"}, rungSpec{"other", "openai"})
	post := func(path, body string, headers ...string) (*http.Response, []string) {
		t.Helper()
		resp, err := h.post(path, body, headers...)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %s %s", path, resp.Status, b)
		}
		return resp, answerModels(t, resp)
	}
	// Healthy: the route's own model.
	resp, models := post("/v1/chat/completions", chatBody)
	if got := resp.Header.Get("X-Spillway-Model"); got != exactModel || !slices.Equal(models, []string{exactModel}) {
		t.Fatalf("healthy: header %q body %v", got, models)
	}
	if r := h.requestRow(t, resp.Header.Get("X-Request-Id")); r.exactModel != exactModel || r.deployment != "primary" || r.depth != 0 {
		t.Errorf("healthy row %+v", r)
	}

	wantReserved := fallbackReservation(t, chatBody, h.cfg.Deployments[0].Price, h.cfg.Deployments[1].Price)
	h.fault("primary", "status=503")
	anth := []string{"anthropic-version", "2023-06-01"}
	for _, tc := range []struct {
		name, path, body string
		headers          []string
	}{
		{"chat", "/v1/chat/completions", chatBody, nil},
		{"chat stream", "/v1/chat/completions", streamBody(chatBody), nil},
		{"messages", "/v1/messages", chatBody, anth},
		{"messages stream", "/v1/messages", streamBody(chatBody), anth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, models := post(tc.path, tc.body, tc.headers...)
			if got := resp.Header.Get("X-Spillway-Model"); got != otherModel {
				t.Errorf("X-Spillway-Model %q, want %q", got, otherModel)
			}
			if len(models) == 0 || slices.ContainsFunc(models, func(m string) bool { return m != otherModel }) {
				t.Errorf("body models %v, want %q", models, otherModel)
			}
			trail := resp.Header.Get("X-Spillway-Trail")
			if !strings.HasSuffix(trail, "other=ok(model: "+otherModel+")") {
				t.Errorf("trail %q", trail)
			}
			r := h.requestRow(t, resp.Header.Get("X-Request-Id"))
			if r.exactModel != otherModel || r.deployment != "other" || r.depth != 1 {
				t.Errorf("row %+v", r)
			}
			// The reservation is the worst case of the priciest rung:
			// the fallback's, for the input bound a primary-only route
			// reserves for the same request.
			if r.reserved != wantReserved {
				t.Errorf("reserved %d, want %d (the fallback rung's worst case)", r.reserved, wantReserved)
			}
		})
	}
}

// fallbackReservation is what a request reserves with otherPrice: the
// input bound is found from what a primary-only route (primaryPrice)
// reserves for the same body.
func fallbackReservation(t *testing.T, body string, primaryPrice, otherPrice *catalog.Price) int64 {
	t.Helper()
	ref := newHarness(t, rungSpec{"primary", "openai"})
	resp, err := ref.post("/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := ref.requestRow(t, resp.Header.Get("X-Request-Id")).reserved
	for n := range 1 << 16 {
		if w, _ := budget.WorstCaseMicro(primaryPrice, n, 64); w == got {
			o, _ := budget.WorstCaseMicro(otherPrice, n, 64)
			return o
		}
	}
	t.Fatalf("no input bound gives the reservation %d", got)
	return 0
}

// exerciseHarness is three rungs a, b, c with an exercise share of 0.2.
func exerciseHarness(t *testing.T) *harness {
	return newHarnessWith(t, func(c *catalog.Config) { c.Routes[0].Exercise = 0.2 },
		rungSpec{"a", "openai"}, rungSpec{"b", "openai"}, rungSpec{"c", "anthropic"})
}

// Exercise through real HTTP: one request in five goes to a secondary
// first, in turn; explain shows the decision the next request gets; the
// trail, the ledger row and the metrics mark it; an exercised rung that
// fails fails over to the primary.
func TestExerciseE2E(t *testing.T) {
	h := exerciseHarness(t)
	var exercised []string
	for i := range 20 {
		ex := explain(t, h, http.MethodGet, "?model="+publicModel, "")
		body := chatBody
		if i%2 == 1 {
			body = streamBody(body)
		}
		resp, err := h.post("/v1/chat/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		dep, trail := resp.Header.Get("X-Spillway-Deployment"), resp.Header.Get("X-Spillway-Trail")
		r := h.requestRow(t, resp.Header.Get("X-Request-Id"))
		if ex.Exercise != "" {
			exercised = append(exercised, ex.Exercise)
			if dep != ex.Exercise || trail != dep+"=ok(exercise)" || !r.exercise || ex.Order[0] != ex.Exercise {
				t.Errorf("request %d: explain said exercise %s (order %v); served by %s, trail %q, row %+v", i, ex.Exercise, ex.Order, dep, trail, r)
			}
		} else if dep != "a" || trail != "a=ok" || r.exercise {
			t.Errorf("request %d: served by %s, trail %q, row %+v", i, dep, trail, r)
		}
	}
	if !slices.Equal(exercised, []string{"b", "c", "b", "c"}) {
		t.Errorf("exercised %v, want b, c, b, c (every fifth request, in turn)", exercised)
	}
	metrics := scrape(t, h)
	for _, want := range []string{
		`spillway_exercise_total{deployment="b",route="` + publicModel + `"} 2`,
		`spillway_exercise_total{deployment="c",route="` + publicModel + `"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// An exercised rung that fails: the primary serves, the trail says so.
	h.fault("b", "status=503")
	for range 4 {
		served(t, h, false)
	}
	r := chat(t, h, false, hello())
	if r.err != nil {
		t.Fatal(r.err)
	}
	if trail := hdr(r.resp, "X-Spillway-Trail"); trail != "b=provider_unavailable(exercise), a=ok" {
		t.Errorf("trail %q", trail)
	}
	if row := h.requestRow(t, hdr(r.resp, "X-Request-Id")); !row.exercise || row.deployment != "a" {
		t.Errorf("row %+v", row)
	}
}

func scrape(t *testing.T, h *harness) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// providerQuota makes deployment id answer 429 past rpm requests, as a
// provider enforcing its quota would (the test runs within one minute).
func providerQuota(id string, rpm int64, sent *atomic.Int64) func(*server.Options) {
	return func(o *server.Options) {
		o.Transport = func(d *catalog.Deployment, base http.RoundTripper) http.RoundTripper {
			if d.ID != id {
				return base
			}
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if sent.Add(1) > rpm {
					return &http.Response{StatusCode: http.StatusTooManyRequests, Request: r, ProtoMajor: 1, ProtoMinor: 1,
						Header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"60"}},
						Body:   io.NopCloser(strings.NewReader(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))}, nil
				}
				return base.RoundTrip(r)
			})
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// priorityKey creates a key of org acme with a priority.
func (h *harness) priorityKey(t *testing.T, priority string) string {
	t.Helper()
	k, _, err := keys.NewKey(context.Background(), h.store, keys.Spec{Org: "acme", Team: "search", Priority: priority}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.auth.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

func (h *harness) postAs(key, path, body string, headers ...string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, h.gw.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return http.DefaultClient.Do(req)
}

// surge is the failover surge: the primary down (its circuit opened by two
// high-priority requests), then highs high-priority and lows low-priority
// requests at once onto the secondary, whose provider enforces 40 rpm. It
// returns how many of each class succeeded, and the refusals of the lows.
type surgeResult struct {
	highOK, lowOK, lowShed int
	other                  map[string]int
	retryAfter             []int
}

func runSurge(t *testing.T, shed bool, highs, lows int) surgeResult {
	var sent atomic.Int64
	h := newHarnessOpts(t, func(c *catalog.Config) {
		c.Deployments[1].Quota = catalog.Quota{RPM: 40}
		if shed {
			c.Routes[0].Shed = catalog.Shed{At: 0.5, Below: "high"}
		}
	}, providerQuota("secondary", 40, &sent), rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	high, low := h.priorityKey(t, "high"), h.priorityKey(t, "low")
	h.fault("primary", "status=503")
	for range 2 {
		resp, err := h.postAs(high, "/v1/chat/completions", chatBody)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("opening the primary's circuit: %v %v", resp.Status, err)
		}
		resp.Body.Close()
	}
	res := surgeResult{other: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range highs + lows {
		isHigh := i%((highs+lows)/highs) == 0 && i/((highs+lows)/highs) < highs
		wg.Go(func() {
			<-start
			key, body := low, chatBody
			if isHigh {
				key = high
			}
			if i%2 == 1 {
				body = streamBody(body)
			}
			resp, err := h.postAs(key, "/v1/chat/completions", body)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			var e struct{ Error struct{ Code string } }
			_ = json.Unmarshal(b, &e)
			switch {
			case resp.StatusCode == 200 && isHigh:
				res.highOK++
			case resp.StatusCode == 200:
				res.lowOK++
			case !isHigh && resp.StatusCode == 503 && e.Error.Code == "shed_low_priority":
				res.lowShed++
				n, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				res.retryAfter = append(res.retryAfter, n)
			default:
				res.other[strconv.Itoa(resp.StatusCode)+" "+e.Error.Code]++
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("shed=%v: high %d/%d ok, low %d/%d ok, %d shed, other %v; the secondary's provider was sent %d", shed, res.highOK, highs, res.lowOK, lows, res.lowShed, res.other, sent.Load())
	return res
}

// Priority shedding under a failover surge: the primary is down and every
// request lands on a secondary provisioned for 40 rpm. Shedding below high
// at half its quota keeps every high-priority request served, while low
// priority beyond the share is refused with 503 shed_low_priority and a
// Retry-After; without the rule the provider's own limit refuses requests
// of any priority.
func TestShedUnderFailoverSurge(t *testing.T) {
	const highs, lows = 16, 64
	res := runSurge(t, true, highs, lows)
	if res.highOK != highs {
		t.Errorf("high priority: %d of %d served, want all", res.highOK, highs)
	}
	if res.lowShed == 0 || res.lowOK+res.lowShed != lows || len(res.other) != 0 {
		t.Errorf("low priority: %d served, %d shed, others %v", res.lowOK, res.lowShed, res.other)
	}
	// Within the share: 2 opening requests plus the lows admitted stay
	// within half the quota whenever a low was admitted.
	if res.lowOK > 20-2 {
		t.Errorf("%d low-priority requests served past the share", res.lowOK)
	}
	for _, s := range res.retryAfter {
		if s < 1 || s > 60 {
			t.Errorf("Retry-After %d, want 1..60", s)
			break
		}
	}
	t.Run("without shedding", func(t *testing.T) {
		res := runSurge(t, false, highs, lows)
		if res.highOK+res.lowOK > 40-2 || len(res.other) == 0 {
			t.Errorf("the provider's quota did not bite: %+v", res)
		}
	})
}

// A request's priority: its key's, lower by the header, never higher; an
// unknown value is refused; explain shows the shed decision per priority.
func TestPriorityHeader(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Deployments[0].Quota = catalog.Quota{RPM: 2}
		c.Routes[0].Shed = catalog.Shed{At: 0.5, Below: "high"}
	}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	normal := h.key
	for _, tc := range []struct {
		header string
		status int
		code   string
	}{
		{"high", 403, "priority_not_allowed"},
		{"critical", 403, "priority_not_allowed"},
		{"urgent", 400, "invalid_priority"},
		{"low", 200, ""},
		{"normal", 503, "shed_low_priority"}, // the one request of the share went to the "low" one
	} {
		resp, err := h.postAs(normal, "/v1/messages", chatBody, "anthropic-version", "2023-06-01", "X-Spillway-Priority", tc.header)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Type  string
			Error struct{ Type, Code string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || e.Error.Code != tc.code {
			t.Errorf("header %q: %d %+v, want %d %s", tc.header, resp.StatusCode, e, tc.status, tc.code)
		}
		if tc.status == 503 && (resp.Header.Get("Retry-After") == "" || e.Type != "error") {
			t.Errorf("shed answer without Retry-After or Anthropic's shape: %v %+v", resp.Header, e)
		}
	}
	ex := explain(t, h, http.MethodGet, "?model="+publicModel+"&priority=low", "")
	if ex.Verdict != "shed" || ex.Shed == nil || ex.Shed.Deployment != "primary" || ex.Shed.Priority != "low" || ex.Shed.Below != "high" ||
		ex.Shed.Requests != 1 || ex.Shed.RPM != 2 || len(ex.Order) != 0 || ex.Rungs[0].Quota == nil || ex.Rungs[0].Quota.Requests != 1 {
		t.Errorf("explain low: %+v shed %+v", ex, ex.Shed)
	}
	ex = explain(t, h, http.MethodGet, "?model="+publicModel+"&priority=high", "")
	if ex.Verdict != "planned" || ex.Shed != nil || ex.Priority != "high" || !slices.Equal(ex.Order, []string{"primary", "secondary"}) {
		t.Errorf("explain high: %+v", ex)
	}
	// A high-priority key is served where its normal requests are shed.
	resp, err := h.postAs(h.priorityKey(t, "high"), "/v1/chat/completions", chatBody)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("high key: %v %v", resp.Status, err)
	}
	resp.Body.Close()
}

// The admin API takes a key's priority, refuses an unknown one, and lists
// it.
func TestAdminKeyPriority(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	do := func(method, body string) (int, string) {
		req, _ := http.NewRequest(method, h.gw.URL+"/v1/admin/keys", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do(http.MethodPost, `{"org":"acme","team":"t","priority":"urgent"}`); code != 400 || !strings.Contains(body, "low, normal, high, critical") {
		t.Errorf("unknown priority: %d %s", code, body)
	}
	if code, body := do(http.MethodPost, `{"org":"acme","team":"t","priority":"critical"}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var list struct{ Keys []server.KeyInfo }
	_, body := do(http.MethodGet, "")
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	var prios []string
	for _, k := range list.Keys {
		prios = append(prios, k.Priority)
	}
	if !slices.Equal(prios, []string{"", "critical"}) {
		t.Errorf("listed priorities %q, want the harness key's (unset) and critical", prios)
	}
}
