package gemini

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/mock"
	"github.com/spillway-gw/spillway/internal/provider"
)

// The adapter against the fault-injecting Gemini mock: every fault of the
// menu.

func mockTarget(t *testing.T, opts mock.Options) (*provider.Target, *mock.Mock) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	m, err := mock.New("gemini", opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		m.Close()
		srv.Close()
	})
	return &provider.Target{BaseURL: srv.URL, Model: "gemini-2.5-flash", APIKey: testKey, HTTP: srv.Client()}, m
}

// faultClient sends the per-request fault script as the mock's header.
func faultClient(base *http.Client, fault string) *http.Client {
	c := *base
	tr := base.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	c.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		if fault != "" {
			r.Header.Set("X-Mock-Fault", fault)
		}
		return tr.RoundTrip(r)
	})
	return &c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// outcome is what one attempt came to.
type outcome struct {
	events []canonical.Event
	err    error
}

func attempt(t *testing.T, tgt *provider.Target, fault string, req *canonical.Request, timeout time.Duration) outcome {
	t.Helper()
	tg := *tgt
	tg.HTTP = faultClient(tgt.HTTP, fault)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := New().Stream(ctx, &tg, req)
	if err != nil {
		return outcome{err: err}
	}
	defer st.Close()
	evs, err := drain(t, st)
	return outcome{events: evs, err: err}
}

// summary folds a stream's events into a response, counting deltas.
func summary(evs []canonical.Event) (r canonical.Response, deltas int) {
	for _, ev := range evs {
		switch ev.Kind {
		case canonical.EventTextDelta:
			r.Text += ev.Text
			deltas++
		case canonical.EventRefusalDelta:
			r.Refusal += ev.Text
			deltas++
		case canonical.EventToolCallStart:
			r.ToolCalls = append(r.ToolCalls, canonical.ToolCall{ID: ev.ID, Name: ev.Name})
		case canonical.EventToolCallDelta:
			r.ToolCalls[ev.Index].Arguments += ev.Text
			deltas++
		case canonical.EventUsage:
			r.Usage = ev.Usage
		case canonical.EventStop:
			r.Stop = ev.Stop
		}
	}
	return r, deltas
}

func TestAgainstMockFaults(t *testing.T) {
	withTools := func() *canonical.Request {
		r := hello()
		r.Tools = []canonical.Tool{{Name: "get_weather"}, {Name: "get_time"}}
		return r
	}
	type check func(t *testing.T, o outcome)
	success := func(stop canonical.StopReason, deltas, calls int, textPrefix string) check {
		return func(t *testing.T, o outcome) {
			t.Helper()
			if !isEOF(o.err) {
				t.Fatalf("stream ended with %v", o.err)
			}
			r, n := summary(o.events)
			if r.Stop != stop || n != deltas || len(r.ToolCalls) != calls || !strings.HasPrefix(r.Text, textPrefix) {
				t.Errorf("stop %s, %d deltas, %d calls, text %q; want %s, %d, %d, %q…", r.Stop, n, len(r.ToolCalls), r.Text, stop, deltas, calls, textPrefix)
			}
			// Output tokens are the content deltas, a whole call counting once.
			if r.Usage.OutputTokens != deltas || r.Usage.InputTokens == 0 {
				t.Errorf("usage %+v for %d deltas and %d calls", r.Usage, deltas, calls)
			}
			for _, tc := range r.ToolCalls {
				if tc.ID == "" || tc.Arguments != `{"city":"Paris"}` {
					t.Errorf("call %+v", tc)
				}
			}
		}
	}
	fails := func(class failure.Class, status int, typ string, retry time.Duration) check {
		return func(t *testing.T, o outcome) {
			t.Helper()
			fe := failure.As(o.err)
			if fe == nil || fe.Class != class || fe.Status != status || fe.ProviderType != typ || fe.RetryAfter != retry {
				t.Fatalf("err = %v, want %s status %d type %q retry %v", o.err, class, status, typ, retry)
			}
		}
	}
	broken := func(contentDeltas int, wantErr func(error) bool) check {
		return func(t *testing.T, o outcome) {
			t.Helper()
			if !wantErr(o.err) {
				t.Fatalf("err = %v", o.err)
			}
			if _, n := summary(o.events); n != contentDeltas {
				t.Errorf("%d content deltas before the break, want %d", n, contentDeltas)
			}
		}
	}
	timedOut := func(err error) bool {
		return classOf(err) == failure.ProviderUnavailable && errors.Is(err, context.DeadlineExceeded)
	}
	tests := []struct {
		fault      string
		req        *canonical.Request
		want       check
		timeout    time.Duration
		missingRow string
	}{
		{fault: "", want: success(canonical.StopEnd, 8, 0, "mock gem ")},
		{fault: "tokens=3;cached=2", want: success(canonical.StopEnd, 3, 0, "mock")},
		{fault: "tokens=0", want: success(canonical.StopEnd, 0, 0, "")},
		{fault: "tools=2", req: withTools(), want: success(canonical.StopToolUse, 2, 2, "")},
		{fault: "tool=get_time", req: withTools(), want: success(canonical.StopToolUse, 1, 1, "")},
		{fault: "refusal", want: success(canonical.StopContentFilter, 0, 0, "")},
		{fault: "refusal;tokens=3", want: success(canonical.StopContentFilter, 3, 0, "mock")},
		{fault: "delay=5ms", want: success(canonical.StopEnd, 8, 0, "mock")},
		{fault: "event_delay=1ms;tokens=2", want: success(canonical.StopEnd, 2, 0, "mock")},
		{fault: "status=503;p=0", want: success(canonical.StopEnd, 8, 0, "mock")},
		{fault: "status=400", want: fails(failure.InvalidRequest, 400, "INVALID_ARGUMENT", 0)},
		{fault: "status=401", want: fails(failure.ProviderAuthentication, 401, "UNAUTHENTICATED", 0)},
		{fault: "status=402", want: fails(failure.ProviderCreditExhausted, 400, "FAILED_PRECONDITION", 0)},
		{fault: "status=403", want: fails(failure.ProviderAuthentication, 403, "PERMISSION_DENIED", 0)},
		{fault: "status=404", want: fails(failure.ProviderBindingInvalid, 404, "NOT_FOUND", 0)},
		{fault: "status=413", want: fails(failure.InvalidRequest, 400, "INVALID_ARGUMENT", 0)},
		{fault: "status=429", want: fails(failure.Throttled, 429, "RESOURCE_EXHAUSTED", 0)},
		{fault: "status=429;retry_after=36", want: fails(failure.Throttled, 429, "RESOURCE_EXHAUSTED", 36*time.Second)},
		{fault: "status=429;retry_after_ms=3950", want: fails(failure.Throttled, 429, "RESOURCE_EXHAUSTED", 3950*time.Millisecond)},
		{fault: "status=500", want: fails(failure.ProviderUnavailable, 500, "INTERNAL", 0)},
		{fault: "status=503", want: fails(failure.ProviderUnavailable, 503, "UNAVAILABLE", 0)},
		{fault: "status=529", want: fails(failure.ProviderUnavailable, 503, "UNAVAILABLE", 0)},
		{fault: "status=504", want: fails(failure.ProviderUnavailable, 504, "DEADLINE_EXCEEDED", 0)},
		{fault: "error_after=2", want: broken(2, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && fe.Class == failure.ProviderUnavailable && fe.Status == 500 && fe.ProviderType == "INTERNAL"
		})},
		{fault: "error_after=1;error_type=RESOURCE_EXHAUSTED", want: broken(1, func(err error) bool { return classOf(err) == failure.Throttled })},
		{fault: "no_terminal", want: broken(8, truncated)},
		{fault: "no_terminal;tools=2", req: withTools(), want: broken(2, truncated)},
		{fault: "die_after=3", want: broken(3, truncated)},
		{fault: "malformed_after=2", want: broken(2, malformed)},
		{fault: "stall", want: broken(0, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && fe.NoResponse && errors.Is(err, context.DeadlineExceeded)
		}), timeout: 100 * time.Millisecond},
		{fault: "stall_after=2", want: broken(2, timedOut), timeout: 200 * time.Millisecond},
	}
	tgt, _ := mockTarget(t, mock.Options{Name: "gem"})
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			req := tt.req
			if req == nil {
				req = hello()
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			o := attempt(t, tgt, tt.fault, req, timeout)
			if tt.missingRow != "" {
				if fe := failure.As(o.err); fe != nil && fe.Class != failure.ProviderCreditExhausted {
					t.Logf("contract gap: %s classified %s; failure.Classify needs %s", tt.fault, fe.Class, tt.missingRow)
					return
				}
				t.Errorf("failure.Classify now has the row %s: drop the missingRow note", tt.missingRow)
			}
			tt.want(t, o)
		})
	}
}

func TestAgainstMockCredentials(t *testing.T) {
	tgt, _ := mockTarget(t, mock.Options{APIKey: "AIza-the-right-key"})
	o := attempt(t, tgt, "", hello(), 10*time.Second)
	fe := failure.As(o.err)
	if fe == nil || fe.Class != failure.ProviderAuthentication || fe.Status != 400 || fe.ProviderCode != "API_KEY_INVALID" {
		t.Errorf("bad key: %v", o.err)
	}
	tgt.APIKey = ""
	o = attempt(t, tgt, "", hello(), 10*time.Second)
	if fe := failure.As(o.err); fe == nil || fe.Class != failure.ProviderAuthentication || fe.Status != 403 {
		t.Errorf("no key: %v", o.err)
	}
}

// The mock validates requests as Gemini does (unknown names, role values,
// one response per call): the adapter's encoding of every feature, and of
// a whole tool loop, must pass.
func TestAgainstMockEncoding(t *testing.T) {
	tgt, m := mockTarget(t, mock.Options{})
	for _, model := range []string{"gemini-2.5-flash", "gemini-3-pro-preview"} {
		tg := *tgt
		tg.Model = model
		if o := attempt(t, &tg, "", fullRequest(), 10*time.Second); !isEOF(o.err) {
			t.Fatalf("%s: %v", model, o.err)
		}
	}
	// A tool loop: the call and its result go back, the model answers in text.
	req := hello()
	req.Tools = []canonical.Tool{{Name: "get_weather"}}
	first := attempt(t, tgt, "tools=1", req, 10*time.Second)
	r, _ := summary(first.events)
	if !isEOF(first.err) || len(r.ToolCalls) != 1 {
		t.Fatalf("first turn: %+v %v", r, first.err)
	}
	call := r.ToolCalls[0]
	req.Messages = append(req.Messages,
		canonical.Message{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{call}},
		canonical.Message{Role: canonical.RoleTool, ToolCallID: call.ID, Content: []canonical.Part{canonical.TextPart("18C")}})
	second := attempt(t, tgt, "", req, 10*time.Second)
	if r, _ := summary(second.events); !isEOF(second.err) || r.Stop != canonical.StopEnd || !strings.HasPrefix(r.Text, "mock") {
		t.Errorf("after the tool result: %+v %v", r, second.err)
	}
	for _, rec := range m.Requests() {
		if got := rec.Header.Get("X-Goog-Api-Key"); got != testKey {
			t.Errorf("%s: key %q", rec.Path, got)
		}
	}
}
