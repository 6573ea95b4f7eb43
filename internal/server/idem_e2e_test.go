package server_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// raw is one whole HTTP answer as the caller saw it.
type raw struct {
	status int
	header http.Header
	body   []byte
	chunks [][]byte // a stream's events, in order
}

func (h *harness) do(t *testing.T, body string, headers ...string) raw {
	t.Helper()
	resp, err := h.post("/v1/chat/completions", body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := raw{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Bytes(); len(l) > 0 {
				r.chunks = append(r.chunks, append([]byte(nil), l...))
			}
		}
		r.body = bytes.Join(r.chunks, []byte("\n"))
		return r
	}
	r.body, _ = io.ReadAll(resp.Body)
	return r
}

func TestIdempotency(t *testing.T) {
	const key = "Idempotency-Key"
	body := func(stream bool, text string) string {
		s := "false"
		if stream {
			s = "true"
		}
		return `{"model":"` + publicModel + `","stream":` + s + `,"max_tokens":32,"messages":[{"role":"user","content":"` + text + `"}]}`
	}
	modes(t, func(t *testing.T, stream bool) {
		t.Run("same key, same body: the answer replayed exactly, run and billed once", func(t *testing.T) {
			h := newHarness(t, rungSpec{"primary", "openai"})
			first := h.do(t, body(stream, "hi"), key, "k-1")
			second := h.do(t, body(stream, "hi"), key, "k-1")
			if first.status != 200 || second.status != 200 || !bytes.Equal(first.body, second.body) {
				t.Fatalf("replay differs:\n%s\n---\n%s", first.body, second.body)
			}
			if stream && len(first.chunks) != len(second.chunks) {
				t.Errorf("stream replayed with %d events, want %d", len(second.chunks), len(first.chunks))
			}
			if second.header.Get("Idempotent-Replayed") != "true" || second.header.Get("X-Request-Id") != first.header.Get("X-Request-Id") || second.header.Get("Request-Id") != first.header.Get("Request-Id") {
				t.Errorf("replay headers: %v", second.header)
			}
			if n := h.mocks["primary"].Count(); n != 1 {
				t.Errorf("the provider ran %d times", n)
			}
			var rows int
			if err := h.db(t).QueryRow(`SELECT count(*) FROM requests`).Scan(&rows); err != nil || rows != 1 {
				t.Errorf("%d ledger rows (%v), want 1: replays never touch the ledger", rows, err)
			}
		})
		t.Run("same key, different body: a typed 409", func(t *testing.T) {
			h := newHarness(t, rungSpec{"primary", "openai"})
			h.do(t, body(stream, "hi"), key, "k-2")
			r := h.do(t, body(stream, "something else"), key, "k-2")
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if json.Unmarshal(r.body, &e); r.status != 409 || e.Error.Code != "idempotency_key_reused" {
				t.Errorf("%d %s, want 409 idempotency_key_reused", r.status, r.body)
			}
		})
		t.Run("concurrent callers wait for the owner and get its answer", func(t *testing.T) {
			h := newHarness(t, rungSpec{"primary", "openai"})
			h.fault("primary", "event_delay=20ms")
			var wg sync.WaitGroup
			out := make([]raw, 8)
			for i := range out {
				wg.Add(1)
				go func() { defer wg.Done(); out[i] = h.do(t, body(stream, "hi"), key, "k-3") }()
			}
			wg.Wait()
			for i := range out {
				if out[i].status != 200 || !bytes.Equal(out[i].body, out[0].body) {
					t.Errorf("caller %d got %d %s", i, out[i].status, out[i].body)
				}
			}
			if n := h.mocks["primary"].Count(); n != 1 {
				t.Errorf("the provider ran %d times for one key", n)
			}
		})
		t.Run("a failed owner fails closed: the key reports the failure, never runs again", func(t *testing.T) {
			h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
			h.fault("primary", "status=503")
			h.fault("secondary", "status=503")
			first := h.do(t, body(stream, "hi"), key, "k-4")
			h.fault("primary", "")
			h.fault("secondary", "")
			second := h.do(t, body(stream, "hi"), key, "k-4")
			if first.status != 502 || second.status != 502 || !bytes.Equal(first.body, second.body) {
				t.Errorf("first %d, second %d %s", first.status, second.status, second.body)
			}
			if c := h.counts(); c["primary"] != 1 || c["secondary"] != 1 {
				t.Errorf("the failed key ran again: %v", c)
			}
		})
	})
	t.Run("each rung gets its own stable upstream key", func(t *testing.T) {
		h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "status=503")
		h.do(t, body(false, "hi"), key, "k-5")
		p, s := h.mocks["primary"].Requests(), h.mocks["secondary"].Requests()
		if len(p) != 1 || len(s) != 1 || p[0].IdempotencyKey == "" || p[0].IdempotencyKey == s[0].IdempotencyKey || strings.Contains(p[0].IdempotencyKey, "k-5") {
			t.Errorf("upstream keys %q and %q: want two different derived keys", p[0].IdempotencyKey, s[0].IdempotencyKey)
		}
	})
	t.Run("no rung tried now (503, nothing upstream) releases the key: a retry may run", func(t *testing.T) {
		h := newHarness(t, rungSpec{"primary", "openai"})
		h.fault("primary", "status=503")
		for range 3 {
			h.do(t, body(false, "hi"), key) // 2 open the circuit, the third is the last-resort probe
		}
		before := h.mocks["primary"].Count()
		first := h.do(t, body(false, "hi"), key, "k-8")
		if first.status != 503 || !strings.Contains(string(first.body), "no_healthy_deployment") {
			t.Fatalf("%d %s", first.status, first.body)
		}
		if h.mocks["primary"].Count() != before {
			t.Fatal("the refused request went upstream")
		}
		// What tells a caller (and spillway drill) that nothing went
		// upstream, so a retry under the key runs afresh: no attempt.
		if a := first.header.Get("X-Spillway-Attempts"); a != "" {
			t.Errorf("the refusal names %s attempts", a)
		}
		h.fault("primary", "")
		h.clock.Advance(time.Minute) // the circuit half-opens
		r := h.do(t, body(false, "hi"), key, "k-8")
		if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("retry after the provider recovered: %d replayed=%q %s", r.status, r.header.Get("Idempotent-Replayed"), r.body)
		}
		// The retry is a request of its own, settled once; the refusal
		// reserved nothing and has no row: nothing counted twice.
		id1, id2 := first.header.Get("X-Request-Id"), r.header.Get("X-Request-Id")
		if id1 == "" || id1 == id2 {
			t.Errorf("request ids %q and %q", id1, id2)
		}
		if n, _, _ := h.rows(t, id1); n != 0 {
			t.Errorf("the refusal has %d settled rows", n)
		}
		if n, row, _ := h.rows(t, id2); n != 1 || row.status != "ok" {
			t.Errorf("the retry has %d settled rows (%+v), want one ok", n, row)
		}
	})
	t.Run("a budget refusal releases the key: a retry may run", func(t *testing.T) {
		h := newHarness(t, rungSpec{"primary", "openai"})
		h.setBudget(t, `{"scope":"key","id":"`+h.keyRec.ID+`","credit_usd":0}`)
		if r := h.do(t, body(false, "hi"), key, "k-6"); r.status != 429 {
			t.Fatalf("%d", r.status)
		}
		h.setBudget(t, `{"scope":"key","id":"`+h.keyRec.ID+`","credit_usd":10}`)
		if r := h.do(t, body(false, "hi"), key, "k-6"); r.status != 200 {
			t.Errorf("after the budget rose: %d %s", r.status, r.body)
		}
	})
}

func TestUsageEndpoint(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	for i := 0; i < 3; i++ {
		served(t, h, i%2 == 0)
	}
	h.fault("primary", "status=529")
	served(t, h, false) // one failover
	get := func(auth, query string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/v1/usage"+query, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var rep struct {
		Rows []struct {
			Group        map[string]string `json:"group"`
			Requests     int64             `json:"requests"`
			FailedOver   int64             `json:"failed_over"`
			CostMicroUSD int64             `json:"cost_micro_usd"`
		} `json:"rows"`
	}
	code, b := get(adminKey, "?group_by=deployment")
	if code != 200 || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("%d %s", code, b)
	}
	byDep := map[string]int64{}
	var failedOver int64
	for _, r := range rep.Rows {
		byDep[r.Group["deployment"]] = r.Requests
		failedOver += r.FailedOver
		if r.CostMicroUSD <= 0 {
			t.Errorf("row %v has no spend", r.Group)
		}
	}
	if byDep["primary"] != 3 || byDep["secondary"] != 1 || failedOver != 1 {
		t.Errorf("by deployment %v, failed over %d; want 3 primary, 1 secondary, 1 failover", byDep, failedOver)
	}
	// A virtual key sees only its own usage; with no key, nothing.
	if code, _ := get("", ""); code != 401 {
		t.Errorf("no key: %d", code)
	}
	code, b = get(h.key, "?group_by=key")
	if code != 200 || !strings.Contains(string(b), h.keyRec.ID) {
		t.Errorf("own usage: %d %s", code, b)
	}
	code, b = get(adminKey, "?group_by=model,deployment&format=csv")
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if code != 200 || err != nil || len(recs) != 3 || recs[0][0] != "model" || recs[0][len(recs[0])-1] != "cost_usd" {
		t.Errorf("csv: %d %v %q", code, err, recs)
	}
	if code, _ := get(adminKey, "?group_by=prompt"); code != 400 {
		t.Errorf("grouping by an unknown dimension: %d", code)
	}
}
