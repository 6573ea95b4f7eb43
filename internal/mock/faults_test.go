package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// errorBody decodes a provider error body strictly in that provider's shape.
func errorBody(t *testing.T, kind string, r result) (typ, code, msg string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error content type %q", ct)
	}
	if kind == "openai" {
		var b struct {
			Error map[string]json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil || len(b.Error) != 4 {
			t.Fatalf("openai error body %s: want exactly message, type, param, code", r.body)
		}
		var c *string
		json.Unmarshal(b.Error["type"], &typ)
		json.Unmarshal(b.Error["message"], &msg)
		json.Unmarshal(b.Error["code"], &c)
		if c != nil {
			code = *c
		}
		if !strings.HasPrefix(r.header.Get("x-request-id"), "req_") {
			t.Errorf("x-request-id %q", r.header.Get("x-request-id"))
		}
		return typ, code, msg
	}
	var b struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Type != "error" {
		t.Fatalf("anthropic error body %s", r.body)
	}
	if b.RequestID == "" || b.RequestID != r.header.Get("request-id") || !strings.HasPrefix(b.RequestID, "req_011C") {
		t.Errorf("request_id %q, header %q", b.RequestID, r.header.Get("request-id"))
	}
	return b.Error.Type, "", b.Error.Message
}

func TestStatusFaultBodies(t *testing.T) {
	tests := []struct {
		kind, fault string
		status      int
		typ, code   string
		msgHas      string // provider detail the gateway must mask
	}{
		{"openai", "status=400", 400, "invalid_request_error", "context_length_exceeded", "maximum context length"},
		{"openai", "status=401", 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-proj-"},
		{"openai", "status=403", 403, "request_forbidden", "unsupported_country_region_territory", "not supported"},
		{"openai", "status=404", 404, "invalid_request_error", "model_not_found", "The model `gpt-4o` does not exist"},
		{"openai", "status=429", 429, "tokens", "rate_limit_exceeded", "in organization org-"},
		{"openai", "status=429;error_type=requests", 429, "requests", "rate_limit_exceeded", "requests per min"},
		{"openai", "status=429;error_code=insufficient_quota", 429, "insufficient_quota", "insufficient_quota", "exceeded your current quota"},
		{"openai", "status=500", 500, "server_error", "", "Please include the request ID req_"},
		{"openai", "status=503", 503, "server_error", "", "overloaded"},
		{"openai", "status=418", 418, "invalid_request_error", "", "418"},
		{"openai", "status=400;error_type=x;error_code=y;message=custom", 400, "x", "y", "custom"},
		{"anthropic", "status=400", 400, "invalid_request_error", "", "prompt is too long"},
		{"anthropic", "status=401", 401, "authentication_error", "", "invalid x-api-key"},
		{"anthropic", "status=402", 402, "billing_error", "", "balance of $0.42"},
		{"anthropic", "status=403", 403, "permission_error", "", "permission"},
		{"anthropic", "status=404", 404, "not_found_error", "", "model: claude-sonnet-4-5"},
		{"anthropic", "status=413", 413, "request_too_large", "", "maximum allowed number of bytes"},
		{"anthropic", "status=429", 429, "rate_limit_error", "", "for your organization ("},
		{"anthropic", "status=500", 500, "api_error", "", "Internal server error"},
		{"anthropic", "status=504", 504, "timeout_error", "", "timed out"},
		{"anthropic", "status=529", 529, "overloaded_error", "", "Overloaded"},
		{"anthropic", "status=422", 422, "invalid_request_error", "", "Unprocessable"},
		{"anthropic", "status=503", 503, "api_error", "", "Unavailable"},
		{"anthropic", "status=400;error_type=invalid_request_error;message=Your credit balance is too low to access the Anthropic API.",
			400, "invalid_request_error", "", "Your credit balance is too low to access the Anthropic API."},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.fault, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				_, srv := newMock(t, tc.kind, Options{})
				r := exchange(t, srv, tc.kind, reqBody(tc.kind, stream, ""), "X-Mock-Fault", tc.fault)
				if r.status != tc.status {
					t.Fatalf("stream=%v: status %d, want %d (%s)", stream, r.status, tc.status, r.body)
				}
				typ, code, msg := errorBody(t, tc.kind, r)
				if typ != tc.typ || code != tc.code || !strings.Contains(msg, tc.msgHas) {
					t.Errorf("stream=%v: type %q code %q msg %q; want %q %q containing %q", stream, typ, code, msg, tc.typ, tc.code, tc.msgHas)
				}
				if r.header.Get("retry-after") != "" {
					t.Errorf("retry-after %q sent unasked", r.header.Get("retry-after"))
				}
			}
		})
	}
}

func TestRetryAfterHeaders(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		r := exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", "status=429;retry_after=3;retry_after_ms=2500")
		if r.status != 429 || r.header.Get("retry-after") != "3" || r.header.Get("retry-after-ms") != "2500" {
			t.Errorf("%s: %d retry-after %q retry-after-ms %q", kind, r.status, r.header.Get("retry-after"), r.header.Get("retry-after-ms"))
		}
		rem := "x-ratelimit-remaining-requests"
		if kind == "anthropic" {
			rem = "anthropic-ratelimit-requests-remaining"
		}
		if r.header.Get(rem) != "0" {
			t.Errorf("%s: %s = %q on a 429", kind, rem, r.header.Get(rem))
		}
	}
}

func TestDelay(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		start := time.Now()
		r := exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", "delay=40ms")
		if r.status != 200 || time.Since(start) < 40*time.Millisecond {
			t.Errorf("%s: status %d after %v", kind, r.status, time.Since(start))
		}
	}
}

// A client that gives up ends a delay, a stall and a stall_after at once:
// the handler returns and no goroutine is left behind.
func TestWaitsEndWithTheClient(t *testing.T) {
	for _, kind := range kinds {
		for _, tc := range []struct {
			fault  string
			stream bool
		}{
			{"delay=1h", false},
			{"stall", false},
			{"stall", true},
			{"stall_after=2", true},
			{"stall_after=0", true},
			{"stall_after=1", false},
			{"event_delay=1h", true},
		} {
			t.Run(fmt.Sprintf("%s/%s/stream=%v", kind, tc.fault, tc.stream), func(t *testing.T) {
				base := runtime.NumGoroutine()
				m, srv := newMock(t, kind, Options{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				// The client gives up after a moment, whether or not headers
				// (and the events before a stall) arrived.
				giveUp := time.AfterFunc(30*time.Millisecond, cancel)
				defer giveUp.Stop()
				start := time.Now()
				resp, err := send(t, ctx, srv, kind, reqBody(kind, tc.stream, ""), "X-Mock-Fault", tc.fault)
				var got []byte
				if err == nil {
					got, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if err == nil {
					t.Fatalf("read ended cleanly: %q", got)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("took %v to notice the cancel", d)
				}
				if tc.fault == "stall_after=2" {
					evs, _ := events(got)
					if st := countStream(t, kind, evs); len(st.deltas) != 2 || st.terminal {
						t.Errorf("before the stall: %d deltas, terminal %v", len(st.deltas), st.terminal)
					}
				}
				// The handler ends because its client left, not because of
				// Close below.
				deadline := time.Now().Add(5 * time.Second)
				for m.inflight.Load() != 0 {
					if time.Now().After(deadline) {
						t.Fatal("handler still running after its client left")
					}
					time.Sleep(time.Millisecond)
				}
				m.Close()
				srv.Close()
				srv.Client().CloseIdleConnections()
				waitGoroutines(t, base)
			})
		}
	}
}

// A stall whose client never gives up is released, connection cut, by
// Close, so a server shutting down is never held by it.
func TestCloseReleasesStalls(t *testing.T) {
	for _, kind := range kinds {
		for _, fault := range []string{"stall", "stall_after=1", "delay=1h"} {
			m, srv := newMock(t, kind, Options{})
			errc := make(chan error, 1)
			go func() {
				resp, err := send(t, context.Background(), srv, kind, reqBody(kind, true, ""), "X-Mock-Fault", fault)
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				errc <- err
			}()
			// The request is parked once the mock recorded it.
			deadline := time.Now().Add(5 * time.Second)
			for m.Count() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%s %s: the mock did not record the request within 5s", kind, fault)
				}
				time.Sleep(time.Millisecond)
			}
			m.Close()
			select {
			case err := <-errc:
				if err == nil {
					t.Errorf("%s %s: clean end after Close, want a cut", kind, fault)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s %s: Close did not release the request", kind, fault)
			}
		}
	}
}

func TestDieAfterCutsTheStream(t *testing.T) {
	for _, kind := range kinds {
		for _, k := range []int{0, 3, 100} {
			_, srv := newMock(t, kind, Options{})
			r := exchange(t, srv, kind, reqBody(kind, true, ""), "X-Mock-Fault", fmt.Sprintf("die_after=%d", k))
			if r.status != 200 || !errors.Is(r.readErr, io.ErrUnexpectedEOF) {
				t.Fatalf("%s die_after=%d: status %d read error %v, want a cut body", kind, k, r.status, r.readErr)
			}
			evs, _ := events(r.body)
			st := countStream(t, kind, evs)
			if want := min(k, defaultTokens); len(st.deltas) != want || st.terminal || st.usageOut != -1 {
				t.Errorf("%s die_after=%d: %d deltas, terminal %v, usage %d", kind, k, len(st.deltas), st.terminal, st.usageOut)
			}
		}
		// Non-streaming: 200 headers, half a body, then the cut.
		_, srv := newMock(t, kind, Options{})
		r := exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", "die_after=1")
		if r.status != 200 || !errors.Is(r.readErr, io.ErrUnexpectedEOF) || json.Valid(r.body) {
			t.Errorf("%s non-streaming die_after: %d %v %q", kind, r.status, r.readErr, r.body)
		}
	}
}

func TestErrorAfter(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		r := exchange(t, srv, kind, reqBody(kind, true, ""), "X-Mock-Fault", "error_after=2")
		if r.status != 200 || r.readErr != nil {
			t.Fatalf("%s: %d %v", kind, r.status, r.readErr)
		}
		evs, err := events(r.body)
		if err != nil {
			t.Fatal(err)
		}
		st := countStream(t, kind, evs)
		if len(st.deltas) != 2 || st.terminal || st.errEvent == "" {
			t.Fatalf("%s: %d deltas, terminal %v, error event %q", kind, len(st.deltas), st.terminal, st.errEvent)
		}
		last := evs[len(evs)-1]
		switch kind {
		case "openai":
			if last.data != `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}` {
				t.Errorf("openai error event %q", last.data)
			}
		case "anthropic":
			if last.name != "error" || last.data != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` {
				t.Errorf("anthropic error event %q %q", last.name, last.data)
			}
		}
	}
}

func TestNoTerminal(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		r := exchange(t, srv, kind, reqBody(kind, true, ""), "X-Mock-Fault", "no_terminal")
		if r.status != 200 || r.readErr != nil {
			t.Fatalf("%s: %d %v, want a clean close", kind, r.status, r.readErr)
		}
		evs, err := events(r.body)
		if err != nil {
			t.Fatal(err)
		}
		st := countStream(t, kind, evs)
		if st.terminal || len(st.deltas) != defaultTokens || st.usageOut != defaultTokens {
			t.Errorf("%s: terminal %v, %d deltas, usage %d", kind, st.terminal, len(st.deltas), st.usageOut)
		}
	}
}

func TestMalformedAfter(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		r := exchange(t, srv, kind, reqBody(kind, true, ""), "X-Mock-Fault", "malformed_after=2")
		evs, err := events(r.body)
		if err != nil || r.readErr != nil {
			t.Fatal(err, r.readErr)
		}
		st := countStream(t, kind, evs)
		if st.badJSON != 1 || len(st.deltas) != defaultTokens || !st.terminal {
			t.Errorf("%s: %d broken events, %d deltas, terminal %v", kind, st.badJSON, len(st.deltas), st.terminal)
		}
		// The broken event comes right after the second delta.
		seen := 0
		for _, ev := range evs {
			if !json.Valid([]byte(ev.data)) && ev.data != "[DONE]" {
				if seen != 2 {
					t.Errorf("%s: broken event after %d deltas", kind, seen)
				}
				break
			}
			if strings.Contains(ev.data, `"content":"`) || strings.Contains(ev.data, `"text_delta"`) {
				if !strings.Contains(ev.data, `"content":""`) {
					seen++
				}
			}
		}
		// Non-streaming: a truncated body, cleanly closed.
		r = exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", "malformed_after=0")
		if r.status != 200 || r.readErr != nil || json.Valid(r.body) || len(r.body) == 0 {
			t.Errorf("%s non-streaming: %d %v valid=%v", kind, r.status, r.readErr, json.Valid(r.body))
		}
	}
}

func TestEventDelay(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		start := time.Now()
		r := exchange(t, srv, kind, reqBody(kind, true, ""), "X-Mock-Fault", "event_delay=3ms;tokens=2")
		evs, _ := events(r.body)
		if want := time.Duration(len(evs)-1) * 3 * time.Millisecond; time.Since(start) < want {
			t.Errorf("%s: %d events in %v, want at least %v", kind, len(evs), time.Since(start), want)
		}
	}
}

// The same seed gives the same sequence of outcomes, and SetFault restarts
// it; p=0 and p=1 are never and always.
func TestProbabilityIsSeeded(t *testing.T) {
	for _, kind := range kinds {
		outcomes := func(seed int64, script string, n int) string {
			m, srv := newMock(t, kind, Options{Seed: seed, Fault: script})
			var b strings.Builder
			for range n {
				r := exchange(t, srv, kind, reqBody(kind, false, ""))
				b.WriteString(map[bool]string{true: "F", false: "."}[r.status == 529])
			}
			if err := m.SetFault(script); err != nil {
				t.Fatal(err)
			}
			for range n {
				r := exchange(t, srv, kind, reqBody(kind, false, ""))
				b.WriteString(map[bool]string{true: "F", false: "."}[r.status == 529])
			}
			return b.String()
		}
		a, b := outcomes(42, "p=0.5;status=529", 20), outcomes(42, "p=0.5;status=529", 20)
		if a != b {
			t.Errorf("%s: same seed, different outcomes:\n%s\n%s", kind, a, b)
		}
		if a[:20] != a[20:] {
			t.Errorf("%s: SetFault did not restart the sequence: %s", kind, a)
		}
		if !strings.Contains(a, "F") || !strings.Contains(a, ".") {
			t.Errorf("%s: p=0.5 gave %s", kind, a)
		}
		if got := outcomes(1, "p=0;status=529", 5); got != ".........." {
			t.Errorf("%s: p=0 gave %s", kind, got)
		}
		if got := outcomes(1, "p=1;status=529", 5); got != "FFFFFFFFFF" {
			t.Errorf("%s: p=1 gave %s", kind, got)
		}
	}
}

// When p= rolls against the fault, the shaping items still apply.
func TestProbabilityKeepsShaping(t *testing.T) {
	_, srv := newMock(t, "openai", Options{Fault: "p=0;status=500;tokens=3"})
	r := exchange(t, srv, "openai", reqBody("openai", true, ""))
	evs, _ := events(r.body)
	if st := countStream(t, "openai", evs); r.status != 200 || len(st.deltas) != 3 {
		t.Errorf("status %d, %d deltas", r.status, len(st.deltas))
	}
}

func TestTimesThenHealthy(t *testing.T) {
	for _, kind := range kinds {
		m, srv := newMock(t, kind, Options{})
		if err := m.SetFault("status=503;times=2"); err != nil {
			t.Fatal(err)
		}
		var got []int
		for i := range 5 {
			hdr := []string{}
			if i == 1 {
				// A per-request script overrides and does not use up times=.
				hdr = []string{"X-Mock-Fault", "tokens=1"}
			}
			got = append(got, exchange(t, srv, kind, reqBody(kind, false, ""), hdr...).status)
		}
		if want := []int{503, 200, 503, 200, 200}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: statuses %v, want %v", kind, got, want)
		}
	}
}

func TestHeaderScriptErrors(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{Fault: "status=500"})
		for _, bad := range []string{"bogus", "times=2", "status=999"} {
			r := exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", bad)
			typ, _, msg := errorBody(t, kind, r)
			if r.status != 400 || typ != "invalid_request_error" || !strings.Contains(msg, "mock: bad X-Mock-Fault header") {
				t.Errorf("%s %q: %d %q %q", kind, bad, r.status, typ, msg)
			}
		}
		if r := exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", "error_code=x;status=429"); kind == "anthropic" && r.status != 400 {
			t.Errorf("anthropic accepted error_code in the header: %d", r.status)
		}
		// A header that parses to nothing overrides the mock-wide fault too.
		if r := exchange(t, srv, kind, reqBody(kind, false, ""), "X-Mock-Fault", ";"); r.status != 200 {
			t.Errorf("%s: empty header script gave %d", kind, r.status)
		}
	}
}

// Many concurrent requests under a probabilistic mock-wide fault: the race
// detector watches the shared state, and every request is recorded.
func TestConcurrentRequests(t *testing.T) {
	for _, kind := range kinds {
		m, srv := newMock(t, kind, Options{Fault: "p=0.3;status=529", Seed: 7})
		const n = 40
		errc := make(chan error, n)
		for i := range n {
			go func() {
				resp, err := send(t, context.Background(), srv, kind, reqBody(kind, i%2 == 0, ""), "Idempotency-Key", fmt.Sprint("k", i))
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 && resp.StatusCode != 529 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				errc <- err
			}()
			if i == n/2 {
				go m.SetFault("p=0.3;status=529")
			}
		}
		for range n {
			if err := <-errc; err != nil {
				t.Error(err)
			}
		}
		if m.Count() != n {
			t.Errorf("%s: count %d, want %d", kind, m.Count(), n)
		}
		keys := map[string]bool{}
		for _, r := range m.Requests() {
			keys[r.IdempotencyKey] = true
		}
		if len(keys) != n {
			t.Errorf("%s: %d distinct idempotency keys recorded", kind, len(keys))
		}
	}
}
