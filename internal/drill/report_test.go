package drill

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// okResult is a clean answer served by rung depth after attempts.
func okResult(d Dialect, stream bool, dep string, attempts int, latency time.Duration) result {
	return result{shape: Shape{Dialect: d, Stream: stream, MaxTokens: 256}, kind: okAnswer, status: 200,
		requestID: "id", model: testModel, bodyModel: testModel, deployment: dep, attempts: attempts,
		trail: dep + "=ok", latency: latency}
}

func TestBuildReportCallerInvariants(t *testing.T) {
	target := Target{Model: testModel, Rungs: testRungs()}
	cases := []struct {
		name   string
		r      result
		broken []string
	}{
		// Unhappy paths first: each must break its invariant.
		{"silent truncation", func() result {
			r := okResult(Chat, true, "p", 1, time.Millisecond)
			r.kind, r.reason = truncated, "cut: unexpected EOF"
			return r
		}(), []string{invNoTruncation}},
		{"model header changed", func() result { r := okResult(Chat, false, "p", 1, 0); r.model = "gpt-4.1"; return r }(), []string{invNoModelChange}},
		{"answer names another model", func() result { r := okResult(Messages, true, "p", 1, 0); r.bodyModel = "gpt-4.1"; return r }(), []string{invNoModelChange}},
		{"answer without the model header", func() result { r := okResult(Responses, false, "p", 1, 0); r.model = ""; return r }(), []string{invNoModelChange}},
		{"served outside the pool", func() result { r := okResult(Chat, false, "elsewhere", 1, 0); return r }(), []string{invNoModelChange}},
		{"no answer", result{shape: Shape{Dialect: Chat}, kind: noAnswer, attempts: -1, reason: "connection reset"}, []string{invAnswered}},
		{"hung", func() result {
			r := okResult(Chat, true, "p", 1, 0)
			r.kind, r.hung, r.reason = truncated, true, "cut"
			return r
		}(), []string{invAnswered, invNoTruncation}},
		{"wire problem", func() result { r := okResult(Chat, true, "p", 1, 0); r.problem = "not JSON"; return r }(), []string{invWellFormed}},
		{"invalid request answered", func() result { r := okResult(Chat, false, "p", 1, 0); r.shape.Invalid = true; return r }(), []string{invCallerErrors}},
		{"valid request refused as the caller's", result{shape: Shape{Dialect: Chat}, kind: failed, status: 400, errCode: "invalid_request", attempts: -1}, []string{invCallerErrors}},
		{"replay differs", func() result {
			r := okResult(Chat, false, "p", 1, 0)
			r.shape.Idem, r.replay = true, "replay has request id x"
			return r
		}(), []string{invReplays}},
		{"clean answer", okResult(Chat, true, "p", 1, 0), nil},
		{"invalid request refused", result{shape: Shape{Dialect: Messages, Invalid: true}, kind: failed, status: 400, errCode: "invalid_request", attempts: -1}, nil},
		{"provider outage is not the caller's", result{shape: Shape{Dialect: Chat}, kind: failed, status: 502, errCode: "upstream_error", model: testModel, attempts: 3}, nil},
		{"typed interrupt", func() result {
			r := okResult(Responses, true, "s", 2, 0)
			r.kind, r.delivered = interrupted, 3
			return r
		}(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := buildReport(Config{Concurrency: 1}, target, nil, []result{c.r}, nil, time.Second)
			if got := rep.Broken(); !slices.Equal(sorted(got), sorted(c.broken)) {
				t.Errorf("broken %v, want %v", got, c.broken)
			}
			if rep.Pass != (len(c.broken) == 0) {
				t.Errorf("pass %v", rep.Pass)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestBuildReportFigures(t *testing.T) {
	target := Target{Model: testModel, Rungs: testRungs()}
	var rs []result
	for i := range 100 {
		rs = append(rs, okResult(Chat, i%2 == 0, "p", 1, time.Duration(i+1)*time.Millisecond))
	}
	for i := range 10 {
		rs = append(rs, okResult(Messages, true, "s", 2, time.Duration(100+i)*time.Millisecond))
	}
	cut := okResult(Responses, true, "t", 3, time.Second)
	cut.kind = interrupted
	rs = append(rs, cut,
		result{shape: Shape{Dialect: Chat}, kind: failed, status: 502, errCode: "upstream_error", model: testModel, attempts: 3},
		result{shape: Shape{Dialect: Chat, Invalid: true}, kind: failed, status: 400, errCode: "invalid_request", attempts: -1})
	lr := &LedgerReport{Spend: map[string]int64{"p": 1234567}, AttemptsBy: map[string]int{"p": 100}, FailedBy: map[string]int{}}
	rep := buildReport(Config{Concurrency: 4, Seed: 9}, target, nil, rs, lr, 2*time.Second)
	if !rep.Pass {
		t.Fatalf("broken %v", rep.Broken())
	}
	if rep.Requests != 113 || rep.Succeeded != 110 || rep.Interrupted != 1 || rep.Failed != 1 || rep.CallerErrors != 1 {
		t.Errorf("outcomes %+v", rep)
	}
	if rep.Availability != 110.0/113 || rep.AvailabilityServable != 110.0/112 {
		t.Errorf("availability %v %v", rep.Availability, rep.AvailabilityServable)
	}
	if rep.Streams.Complete != 60 || rep.Streams.Interrupted != 1 || rep.Streams.Truncated != 0 {
		t.Errorf("streams %+v", rep.Streams)
	}
	if rep.Failovers != 11 || !slices.Equal(rep.ServedAtDepth, []int{100, 10, 1}) || rep.Attempts[2] != 10 || rep.Attempts[3] != 2 {
		t.Errorf("failovers %d depth %v attempts %v", rep.Failovers, rep.ServedAtDepth, rep.Attempts)
	}
	if rep.FirstAttempt != (Latency{N: 100, P50: 50, P99: 99}) || rep.AfterFailover != (Latency{N: 10, P50: 104, P99: 109}) {
		t.Errorf("latency %+v %+v", rep.FirstAttempt, rep.AfterFailover)
	}
	if rep.AddedP50 != 54 || rep.AddedP99 != 10 {
		t.Errorf("added %v %v", rep.AddedP50, rep.AddedP99)
	}
	if rep.Deployments[0].SpendMicro != 1234567 || rep.Deployments[1].Served != 10 {
		t.Errorf("deployments %+v", rep.Deployments)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"availability        97.35% (110/113)", "1.234567", "PASS: every invariant held", "failover adds       p50 +54.0ms"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil || !json.Valid(b) {
		t.Fatalf("JSON: %v", err)
	}
}

func TestReportTextNamesBrokenInvariants(t *testing.T) {
	r := okResult(Chat, true, "p", 1, 0)
	r.kind, r.reason = truncated, "cut: unexpected EOF"
	rep := buildReport(Config{}, Target{Model: testModel, Rungs: testRungs()}, nil, []result{r}, nil, time.Second)
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "FAIL (1)   no_silent_truncation") || !strings.Contains(text.String(), "FAIL: broken invariants: no_silent_truncation") ||
		!strings.Contains(text.String(), "cut: unexpected EOF") {
		t.Errorf("report:\n%s", text.String())
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	l := latency(ds)
	if l.N != 5 || l.P50 != ms(3) || l.P99 != ms(5) {
		t.Errorf("%+v", l)
	}
	if (latency(nil) != Latency{}) {
		t.Error("empty latency")
	}
	if percentile([]time.Duration{7}, 0.99) != 7 {
		t.Error("one sample")
	}
}

// A drill whose faults never happened proves nothing and must not pass.
func TestExercised(t *testing.T) {
	target := Target{Model: testModel, Rungs: testRungs()}
	rs := make([]result, minExercised)
	for i := range rs {
		rs[i] = okResult(Chat, false, "p", 1, time.Millisecond)
	}
	lr := &LedgerReport{Hops: map[string]int{}}
	rep := buildReport(Config{}, target, nil, rs, lr, time.Second)
	if rep.Pass || !slices.Equal(rep.Broken(), []string{invExercised}) {
		t.Fatalf("a drill without faults: broken %v", rep.Broken())
	}
	for _, inv := range rep.Invariants {
		if inv.Name == invExercised && inv.Violations != 6 {
			t.Errorf("%d missing faults: %v", inv.Violations, inv.Examples)
		}
	}
	// With every fault met it passes.
	rs[0].attempts = 2
	rs[1].shape.Stream, rs[1].kind = true, interrupted
	lr.Hops = map[string]int{"provider_unavailable/529": 1, "throttled/429": 1, "provider_authentication/401": 1, "provider_unavailable/0": 1}
	if rep := buildReport(Config{}, target, nil, rs, lr, time.Second); !rep.Pass {
		t.Errorf("broken %v", rep.Broken())
	}
	// A small drill is not held to it.
	if rep := buildReport(Config{}, target, nil, rs[:10], &LedgerReport{Hops: map[string]int{}}, time.Second); !rep.Pass {
		t.Errorf("small drill: broken %v", rep.Broken())
	}
}
