package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

func reqID(r chatResult) string {
	if r.resp != nil {
		return r.resp.Header.Get("X-Request-Id")
	}
	var apiErr *openai.Error
	if errors.As(r.err, &apiErr) && apiErr.Response != nil {
		return apiErr.Response.Header.Get("X-Request-Id")
	}
	return ""
}

// Every settlement case of the billing rules, end to end: what the caller
// is told and what the ledger holds must agree, once.
func TestSettlement(t *testing.T) {
	t.Run("success is charged the serving rung's reported usage, once", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
			h.fault("primary", "cached=4")
			r := chat(t, h, stream, hello())
			if r.err != nil {
				t.Fatal(r.err)
			}
			n, row, atts := h.rows(t, reqID(r))
			if n != 1 || row.status != "ok" || row.deployment != "primary" || row.routeDepth != 0 || row.attempts != 1 {
				t.Fatalf("%d rows, %+v", n, row)
			}
			if row.out != 8 || row.cached != 4 || row.in == 0 {
				t.Errorf("tokens in %d cached %d out %d, want the provider's report (out 8, cached 4)", row.in, row.cached, row.out)
			}
			want := h.costOf("primary", row.in, row.cached, row.out)
			if row.cost != want || row.costStatus != "priced" || row.reserved < row.cost {
				t.Errorf("cost %d (%s), reserved %d; want %d", row.cost, row.costStatus, row.reserved, want)
			}
			if !stream {
				if got := hdr(r.resp, "X-Spillway-Cost-Usd"); got != fmt.Sprintf("0.%06d", want) {
					t.Errorf("cost header %q, want %d micro-USD", got, want)
				}
			}
			if len(atts) != 1 || atts[0].cost != want {
				t.Errorf("attempts %+v", atts)
			}
		})
	})
	t.Run("a failover costs one call: failed hops settle at zero", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
			h.fault("primary", "status=529")
			r := chat(t, h, stream, hello())
			if r.err != nil {
				t.Fatal(r.err)
			}
			n, row, atts := h.rows(t, reqID(r))
			if n != 1 || row.deployment != "secondary" || row.routeDepth != 1 || row.attempts != 2 {
				t.Fatalf("%d rows, %+v", n, row)
			}
			if len(atts) != 2 || atts[0].cost != 0 || atts[0].failureClass != "provider_unavailable" || atts[0].httpStatus != 529 {
				t.Errorf("the failed hop: %+v", atts)
			}
			if want := h.costOf("secondary", row.in, row.cached, row.out); row.cost != want || atts[1].cost != want {
				t.Errorf("cost %d / %d, want %d at the secondary's price", row.cost, atts[1].cost, want)
			}
		})
	})
	t.Run("an empty completion costs nothing", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			h := newHarness(t, rungSpec{"primary", "openai"})
			h.fault("primary", "tokens=0")
			r := chat(t, h, stream, hello())
			if r.err != nil {
				t.Fatal(r.err)
			}
			if _, row, _ := h.rows(t, reqID(r)); row.cost != 0 || row.status != "ok" {
				t.Errorf("empty completion settled %+v", row)
			}
		})
	})
	t.Run("a stream that dies after K tokens is charged exactly K", func(t *testing.T) {
		for _, kind := range []string{"openai", "anthropic"} {
			t.Run(kind, func(t *testing.T) {
				h := newHarness(t, rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				h.fault("primary", "die_after=5;tokens=20")
				r := chat(t, h, true, hello())
				if r.err == nil {
					t.Fatal("no error")
				}
				n, row, _ := h.rows(t, reqID(r))
				if n != 1 || row.status != "interrupted" || row.out != 5 {
					t.Fatalf("%d rows %+v: want interrupted with 5 output tokens", n, row)
				}
				if want := h.costOf("primary", row.in, row.cached, 5); row.cost != want {
					t.Errorf("cost %d, want %d (input + exactly 5 output tokens)", row.cost, want)
				}
			})
		}
	})
	t.Run("every rung failed: nothing charged, the reservation released", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
			h.fault("primary", "status=503")
			h.fault("secondary", "status=500")
			r := chat(t, h, stream, hello())
			if r.err == nil {
				t.Fatal("no error")
			}
			n, row, atts := h.rows(t, reqID(r))
			if n != 1 || row.status != "failed" || row.cost != 0 || len(atts) != 2 || row.costStatus != "none" {
				t.Fatalf("%d rows %+v %+v", n, row, atts)
			}
			for _, st := range h.budget.Snapshot() {
				if st.HeldMicro != 0 || st.SpentMicro != 0 {
					t.Errorf("scope %s/%s still holds %d, spent %d", st.Kind, st.ID, st.HeldMicro, st.SpentMicro)
				}
			}
		})
	})
	t.Run("a caller who leaves mid-stream pays for what was delivered", func(t *testing.T) {
		h := newHarness(t, rungSpec{"primary", "openai"})
		h.fault("primary", "stall_after=3;tokens=20")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var resp *http.Response
		c := h.client(option.WithResponseInto(&resp))
		s := c.Chat.Completions.NewStreaming(ctx, hello())
		got := 0
		for s.Next() {
			if got++; got == 4 { // the role chunk and 3 content chunks
				cancel()
			}
		}
		row := h.waitRow(t, resp.Header.Get("X-Request-Id"))
		if row.status != "cancelled" || row.out != 3 {
			t.Fatalf("%+v: want cancelled with the 3 delivered tokens", row)
		}
		if want := h.costOf("primary", row.in, 0, 3); row.cost != want {
			t.Errorf("cost %d, want %d", row.cost, want)
		}
	})
	t.Run("bring-your-own-key traffic carries no cost", func(t *testing.T) {
		h := newHarnessWith(t, func(c *catalog.Config) {
			c.Deployments[0].Funding, c.Deployments[0].Price = catalog.FundingBYOK, nil
		}, rungSpec{"primary", "openai"})
		r := chat(t, h, false, hello())
		if r.err != nil {
			t.Fatal(r.err)
		}
		if hdr(r.resp, "X-Spillway-Cost-Status") != "unpriced" || hdr(r.resp, "X-Spillway-Cost-Usd") != "" {
			t.Errorf("headers: status %q cost %q", hdr(r.resp, "X-Spillway-Cost-Status"), hdr(r.resp, "X-Spillway-Cost-Usd"))
		}
		if _, row, _ := h.rows(t, reqID(r)); row.cost != 0 || row.costStatus != "unpriced" || row.reserved != 0 {
			t.Errorf("%+v", row)
		}
	})
	t.Run("an unpriced rung is skipped, never routed at $0", func(t *testing.T) {
		h := newHarnessWith(t, func(c *catalog.Config) { c.Deployments[0].Price = nil },
			rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		r := chat(t, h, false, hello())
		if r.err != nil || hdr(r.resp, "X-Spillway-Trail") != "secondary=ok" {
			t.Fatalf("err %v trail %q", r.err, hdr(r.resp, "X-Spillway-Trail"))
		}
		if h.mocks["primary"].Count() != 0 {
			t.Error("the unpriced rung got traffic")
		}
	})
	t.Run("no rung can be priced: the caller is told", func(t *testing.T) {
		h := newHarnessWith(t, func(c *catalog.Config) {
			c.Deployments[0].MaxOutputTokens, c.Deployments[0].ContextWindow = 0, 0
		}, rungSpec{"primary", "openai"})
		p := hello()
		p.MaxCompletionTokens = param.Opt[int64]{} // no max_tokens: no bounded worst case
		r := chat(t, h, false, p)
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "price_unknown" {
			t.Fatalf("err = %v, want 503 price_unknown", r.err)
		}
	})
}

// setBudget sets limits through the admin API.
func (h *harness) setBudget(t testing.TB, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, h.gw.URL+"/v1/admin/budgets", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("set budget: %s %s", resp.Status, b)
	}
}

// Gate refusals carry their specific reason and never walk the chain.
func TestBudgetRefusals(t *testing.T) {
	tests := []struct {
		name, budget, code string
	}{
		{"key credit", `{"scope":"key","id":"KEY","credit_usd":0}`, "key_budget_exceeded"},
		{"team daily cap", `{"scope":"team","id":"search","daily_cap_usd":0}`, "team_daily_cap_reached"},
		{"org credit", `{"scope":"org","id":"acme","credit_usd":0.000001}`, "org_credit_exhausted"},
		{"model tpm", `{"scope":"model","id":"` + publicModel + `","tpm":1}`, "model_tpm_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
				h.setBudget(t, strings.ReplaceAll(tt.budget, "KEY", h.keyRec.ID))
				r := chat(t, h, stream, hello())
				var apiErr *openai.Error
				if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != tt.code {
					t.Fatalf("err = %v, want 429 %s", r.err, tt.code)
				}
				if c := h.counts(); c["primary"]+c["secondary"] != 0 {
					t.Errorf("a gate refusal walked the chain: %v", c)
				}
			})
		})
	}
	t.Run("key rpm", func(t *testing.T) {
		h := newHarness(t, rungSpec{"primary", "openai"})
		h.setBudget(t, `{"scope":"key","id":"`+h.keyRec.ID+`","rpm":2}`)
		for i := 0; i < 2; i++ {
			if r := chat(t, h, false, hello()); r.err != nil {
				t.Fatal(r.err)
			}
		}
		r := chat(t, h, false, hello())
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "key_rpm_exceeded" || apiErr.Response.Header.Get("Retry-After") == "" {
			t.Fatalf("err = %v, want 429 key_rpm_exceeded with Retry-After", r.err)
		}
	})
}

// Reservations count against the balance the moment they are made: 200
// concurrent requests against a budget for 10 cannot overspend. The
// provider holds every admitted request until all 200 have been decided,
// so no settlement frees credit early.
func TestNoOverspend(t *testing.T) {
	gate := make(chan struct{})
	var upstream http.Handler
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		upstream.ServeHTTP(w, r)
	}))
	defer held.Close()
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Deployments[0].BaseURL = held.URL
		// Generous bounds: the provider is held on purpose.
		c.Deployments[0].Timeouts = catalog.Timeouts{FirstByte: catalog.Duration(time.Minute), Idle: catalog.Duration(time.Minute), Total: catalog.Duration(2 * time.Minute)}
	}, rungSpec{"primary", "openai"})
	upstream = h.mocks["primary"]
	body := `{"model":"` + publicModel + `","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Say hello."}]}`
	// One request's worst case, as the gateway reserves it.
	close(gate)
	resp, err := h.post("/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var reserved, spent0 int64
	if err := h.db(t).QueryRow(`SELECT reserved_micro_usd, cost_micro_usd FROM requests`).Scan(&reserved, &spent0); err != nil || reserved == 0 {
		t.Fatalf("reserved %d: %v", reserved, err)
	}
	gate = make(chan struct{})
	credit := spent0 + 10*reserved + reserved/2 // room for exactly 10 more worst cases
	h.setBudget(t, fmt.Sprintf(`{"scope":"key","id":"%s","credit_usd":%.6f}`, h.keyRec.ID, float64(credit)/1e6))

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	decided := make(chan struct{}, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.post("/v1/chat/completions", body)
			if err != nil {
				t.Error(err)
				return
			}
			decided <- struct{}{}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	// 190 refusals come back at once; the 10 admitted wait at the provider.
	for i := 0; i < 190; i++ {
		select {
		case <-decided:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d requests were decided", i)
		}
	}
	close(gate)
	wg.Wait()
	if codes[200] != 10 || codes[429] != 190 {
		t.Fatalf("status counts %v: want exactly 10 served and 190 refused", codes)
	}
	var spent int64
	if err := h.db(t).QueryRow(`SELECT sum(cost_micro_usd) FROM requests`).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if spent > credit {
		t.Errorf("spent %d > credit %d", spent, credit)
	}
}

func TestAuth(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	for _, tc := range []struct {
		name, header, value string
		status              int
		code                string
	}{
		{"no key", "", "", 401, "missing_api_key"},
		{"unknown key", "Authorization", "Bearer sk-spw-nope", 401, "invalid_api_key"},
		{"x-api-key works", "X-Api-Key", h.key, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions",
				strings.NewReader(`{"model":"`+publicModel+`","messages":[{"role":"user","content":"hi"}]}`))
			if tc.header != "" {
				req.Header.Set(tc.header, tc.value)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Code, Type string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != tc.status || e.Error.Code != tc.code {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, e.Error.Code, tc.status, tc.code)
			}
		})
	}
	if h.mocks["primary"].Count() != 1 {
		t.Errorf("unauthenticated requests reached the provider: %d", h.mocks["primary"].Count())
	}
	// Revoked through the admin API: refused at once.
	req, _ := http.NewRequest(http.MethodDelete, h.gw.URL+"/v1/admin/keys/"+h.keyRec.ID, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	r := chat(t, h, false, hello())
	var apiErr *openai.Error
	if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("a revoked key: %v", r.err)
	}
}

// panicky panics on its first round trip, as an adapter fed bytes it did
// not expect might; later round trips pass.
type panicky struct {
	base    http.RoundTripper
	tripped atomic.Bool
}

func (p *panicky) RoundTrip(r *http.Request) (*http.Response, error) {
	if !p.tripped.Swap(true) {
		panic("adapter bug")
	}
	return p.base.RoundTrip(r)
}

// A panic after the reservation must not leave the budget hold or the
// ledger reservation open until a restart: the request settles as failed.
func TestPanicReleasesTheReservation(t *testing.T) {
	h := newHarnessOpts(t, nil, func(o *server.Options) {
		o.Transport = func(_ *catalog.Deployment, base http.RoundTripper) http.RoundTripper { return &panicky{base: base} }
	}, rungSpec{"primary", "openai"})
	h.setBudget(t, `{"scope":"key","id":"`+h.keyRec.ID+`","credit_usd":10}`)
	if r := chat(t, h, false, hello()); r.err == nil {
		t.Fatal("the panicking request succeeded")
	}
	for _, s := range h.budget.Snapshot() {
		if s.HeldMicro != 0 {
			t.Errorf("scope %s/%s still holds %d micro-USD", s.Kind, s.ID, s.HeldMicro)
		}
	}
	db := h.db(t)
	var open, failed int
	if err := db.QueryRow(`SELECT count(*) FROM reservations WHERE settled_at IS NULL AND released_at IS NULL`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM requests WHERE status = 'failed' AND cost_micro_usd = 0`).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	if open != 0 || failed != 1 {
		t.Errorf("%d open reservations, %d failed free request rows; want 0 and 1", open, failed)
	}
	if r := chat(t, h, false, hello()); r.err != nil {
		t.Errorf("the next request: %v", r.err)
	}
}
