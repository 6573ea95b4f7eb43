package bedrock

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

// The adapter against the fault-injecting Bedrock mock: every fault of the
// menu, signed with SigV4 and with an API key.

func mockTarget(t *testing.T, sigv4 bool) (*provider.Target, *mock.Mock) {
	t.Helper()
	m, err := mock.New("bedrock", mock.Options{Name: "br", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		m.Close()
		srv.Close()
	})
	tgt := &provider.Target{BaseURL: srv.URL, Model: profileARN, APIKey: testKey, Region: "us-east-1", HTTP: srv.Client()}
	if sigv4 {
		tgt.APIKey = ""
		tgt.AWS = &provider.AWSKeys{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "secret"}
	}
	return tgt, m
}

// faultClient sends the per-request fault script as the mock's header (added
// after signing: the mock does not check signatures).
func faultClient(base *http.Client, fault string) *http.Client {
	c := *base
	tr := base.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	c.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		if fault != "" {
			r = r.Clone(r.Context())
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

// summary folds a stream's events into a response, counting content deltas.
func summary(evs []canonical.Event) (r canonical.Response, deltas int) {
	for _, ev := range evs {
		switch ev.Kind {
		case canonical.EventStart:
			r.ID, r.Model = ev.ID, ev.Name
		case canonical.EventTextDelta:
			r.Text += ev.Text
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
			// Output tokens are the content deltas.
			if r.Usage.OutputTokens != deltas || r.Usage.InputTokens == 0 {
				t.Errorf("usage %+v for %d deltas", r.Usage, deltas)
			}
			if r.ID == "" || r.Model != profileARN {
				t.Errorf("id %q model %q", r.ID, r.Model)
			}
			for _, tc := range r.ToolCalls {
				if !strings.HasPrefix(tc.ID, "tooluse_") || tc.Arguments != `{"city":"Paris"}` {
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
	unavailable := func(err error) bool { return classOf(err) == failure.ProviderUnavailable }
	truncated := func(err error) bool {
		return unavailable(err) && strings.Contains(err.Error(), "terminal event")
	}
	timedOut := func(err error) bool {
		return unavailable(err) && errors.Is(err, context.DeadlineExceeded)
	}
	tests := []struct {
		fault   string
		req     *canonical.Request
		want    check
		timeout time.Duration
	}{
		{fault: "", want: success(canonical.StopEnd, 8, 0, "mock br ")},
		{fault: "tokens=3;cached=2", want: success(canonical.StopEnd, 3, 0, "mock")},
		{fault: "tokens=0", want: success(canonical.StopEnd, 0, 0, "")},
		{fault: "tools=2", req: withTools(), want: success(canonical.StopToolUse, 2*len(`{"city":"Paris"}`)/4, 2, "")},
		{fault: "tool=get_time", req: withTools(), want: success(canonical.StopToolUse, len(`{"city":"Paris"}`)/4, 1, "")},
		{fault: "refusal", want: success(canonical.StopContentFilter, 0, 0, "")},
		{fault: "refusal;tokens=3", want: success(canonical.StopContentFilter, 3, 0, "mock")},
		{fault: "delay=5ms", want: success(canonical.StopEnd, 8, 0, "mock")},
		{fault: "event_delay=1ms;tokens=2", want: success(canonical.StopEnd, 2, 0, "mock")},
		{fault: "status=503;p=0", want: success(canonical.StopEnd, 8, 0, "mock")},
		{fault: "status=400", want: fails(failure.InvalidRequest, 400, "ValidationException", 0)},
		{fault: "status=401", want: fails(failure.ProviderAuthentication, 401, "UnrecognizedClientException", 0)},
		{fault: "status=402", want: fails(failure.ProviderCreditExhausted, 402, "ValidationException", 0)},
		{fault: "status=403", want: fails(failure.ProviderAuthentication, 403, "AccessDeniedException", 0)},
		{fault: "status=404", want: fails(failure.ProviderBindingInvalid, 404, "ResourceNotFoundException", 0)},
		{fault: "status=408", want: fails(failure.ProviderUnavailable, 408, "ModelTimeoutException", 0)},
		{fault: "status=413", want: fails(failure.InvalidRequest, 413, "ValidationException", 0)},
		{fault: "status=424", want: fails(failure.ProviderUnavailable, 424, "ModelErrorException", 0)},
		{fault: "status=429", want: fails(failure.Throttled, 429, "ThrottlingException", 0)},
		{fault: "status=429;retry_after=36", want: fails(failure.Throttled, 429, "ThrottlingException", 36*time.Second)},
		{fault: "status=429;error_type=ModelNotReadyException", want: fails(failure.Throttled, 429, "ModelNotReadyException", 0)},
		{fault: "status=500", want: fails(failure.ProviderUnavailable, 500, "InternalServerException", 0)},
		{fault: "status=502", want: fails(failure.ProviderUnavailable, 502, "InternalServerException", 0)},
		{fault: "status=503", want: fails(failure.ProviderUnavailable, 503, "ServiceUnavailableException", 0)},
		{fault: "status=529", want: fails(failure.ProviderUnavailable, 503, "ServiceUnavailableException", 0)},
		{fault: "error_after=2",
			want: broken(2, func(err error) bool {
				fe := failure.As(err)
				return fe != nil && fe.Status == 503 && fe.ProviderType == "serviceUnavailableException"
			})},
		{fault: "error_after=1;error_type=throttlingException",
			want: broken(1, func(err error) bool { return classOf(err) == failure.Throttled })},
		{fault: "error_after=1;error_type=modelStreamErrorException",
			want: broken(1, func(err error) bool { fe := failure.As(err); return fe != nil && fe.Status == 424 && unavailable(err) })},
		{fault: "error_after=1;error_type=validationException",
			want: broken(1, func(err error) bool { return classOf(err) == failure.InvalidRequest })},
		{fault: "die_after=3", want: broken(3, truncated)},
		{fault: "die_after=0", want: broken(0, truncated)},
		{fault: "malformed_after=2",
			want: broken(2, func(err error) bool { return unavailable(err) && strings.Contains(err.Error(), "checksum") })},
		{fault: "no_terminal", want: broken(8, truncated)},
		{fault: "stall", want: broken(0, timedOut), timeout: 100 * time.Millisecond},
		{fault: "stall_after=2", want: broken(2, timedOut), timeout: 100 * time.Millisecond},
	}
	for _, sigv4 := range []bool{false, true} {
		tgt, _ := mockTarget(t, sigv4)
		for _, tt := range tests {
			name := tt.fault
			if name == "" {
				name = "healthy"
			}
			if sigv4 {
				name = "sigv4/" + name
			}
			t.Run(name, func(t *testing.T) {
				req := tt.req
				if req == nil {
					req = hello()
				}
				timeout := tt.timeout
				if timeout == 0 {
					timeout = 5 * time.Second
				}
				tt.want(t, attempt(t, tgt, tt.fault, req, timeout))
			})
		}
	}
}

// The mock answers the adapter's full request (images, tool history, every
// inference setting): the encoding passes Bedrock's validation as the mock
// models it.
func TestMockAcceptsFullRequest(t *testing.T) {
	tgt, m := mockTarget(t, true)
	req := fullRequest()
	req.Messages = req.Messages[:len(req.Messages)-1] // end on the user turn
	if o := attempt(t, tgt, "", req, 5*time.Second); !isEOF(o.err) {
		t.Fatal(o.err)
	}
	recs := m.Requests()
	if len(recs) != 1 || recs[0].Path != "/model/"+profileARN+"/converse-stream" {
		t.Fatalf("requests %+v", recs)
	}
	if auth := recs[0].Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
		t.Errorf("Authorization %q", auth)
	}
}
