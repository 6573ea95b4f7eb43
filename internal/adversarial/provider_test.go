package adversarial

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

const mib = 1 << 20

// providerAttacks: the provider is hostile or broken; the caller is not.
func (e *env) providerAttacks() []attack {
	return []attack{
		{"usage_overflow", 30 * time.Second, 64 * mib, e.usageOverflow},
		{"empty_and_foreign_answers", 10 * time.Second, 64 * mib, e.foreignAnswers},
		{"redirects", 5 * time.Second, 64 * mib, e.redirects},
		{"injected_headers", 5 * time.Second, 64 * mib, e.injectedHeaders},
		{"endless_body", 10 * time.Second, 64 * mib, e.endlessBody},
		{"oversized_answer", 20 * time.Second, 150 * mib, e.oversizedAnswer},
		{"content_after_finish", 5 * time.Second, 64 * mib, e.contentAfterFinish},
		{"ignored_max_tokens", 10 * time.Second, 64 * mib, e.ignoredMaxTokens},
	}
}

// saneTokens bounds every token figure the gateway may show or store.
const saneTokens = 1 << 40

// usageOverflow: a provider reporting counts near 2^63, or negative. A
// whole answer fails over (nothing went out); a streamed one stands but
// its usage is not believed. The usage report stays sane, and the gateway
// restarts on the same ledger.
func (e *env) usageOverflow(t *testing.T) {
	m := e.mocks["usage"]
	defer m.SetFault("")
	for _, fault := range []string{
		"report_input=9223372036854775000;report_output=9223372036854775000",
		"report_output=9223372036854775807",
		"report_input=4611686018427387904;report_output=4611686018427387904",
		"report_input=-5;report_output=-7",
		"report_output=-9223372036854775808",
	} {
		if err := m.SetFault(fault); err != nil {
			t.Fatal(err)
		}
		r := e.g.chat(t, "usage", false, 20)
		failedOver(t, r, "usage")
		if u := r.usage; u == nil || u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.TotalTokens > saneTokens {
			t.Errorf("%s, whole answer: usage %+v", fault, r.usage)
		}
		r = e.g.chat(t, "usage", true, 20)
		if r.status != http.StatusOK || !r.done || r.text == "" {
			t.Errorf("%s, stream: %s", fault, r)
		}
		if u := r.usage; u != nil && (u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.TotalTokens > saneTokens) {
			t.Errorf("%s, stream: the caller was shown usage %+v", fault, *u)
		}
	}
	// Ten requests: the five whole answers were served by the secondary,
	// the five streams by the usage deployment.
	before := e.usageReport(t)
	if before["usage"].Requests != 5 || before["secondary"].FailedOver < 5 {
		t.Errorf("the usage report: %+v", before)
	}
	// The same ledger serves a restarted process: nothing to repair, no
	// new ledger, the same key, the same report.
	e.g.restart(t)
	if out := e.g.out.String(); strings.Contains(out, "created a new") || strings.Contains(out, "repaired") || strings.Contains(out, "sk-spw-") {
		t.Errorf("the restart on the same ledger said:\n%s", out)
	}
	after := e.usageReport(t)
	for dep, row := range before {
		if after[dep] != row {
			t.Errorf("after the restart, %s's usage is %+v, was %+v", dep, after[dep], row)
		}
	}
	if r := e.g.chat(t, "plain", false, 20); r.status != http.StatusOK || r.trail() != "plain=ok" {
		t.Errorf("after the restart: %s", r)
	}
}

// usageReport reads GET /v1/usage grouped by deployment with the admin key
// and checks that no figure in it is negative or overflowed.
func (e *env) usageReport(t *testing.T) map[string]usageRow {
	t.Helper()
	var rep struct {
		Rows []struct {
			Group map[string]string `json:"group"`
			usageRow
		} `json:"rows"`
	}
	e.g.adminGet(t, "/v1/usage?group_by=deployment", &rep)
	out := map[string]usageRow{}
	for _, r := range rep.Rows {
		u := r.usageRow
		for _, n := range []int64{u.Requests, u.Succeeded, u.Failed, u.FailedOver, u.Attempts, u.InputTokens, u.OutputTokens, u.CachedTokens, u.CostMicroUSD} {
			if n < 0 || n > saneTokens {
				t.Errorf("usage report row %v: %+v", r.Group, u)
				break
			}
		}
		out[r.Group["deployment"]] = u
	}
	return out
}

type usageRow struct {
	Requests     int64 `json:"requests"`
	Succeeded    int64 `json:"succeeded"`
	Failed       int64 `json:"failed"`
	FailedOver   int64 `json:"failed_over"`
	Attempts     int64 `json:"attempts"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	CostMicroUSD int64 `json:"cost_micro_usd"`
}

// foreignAnswers: 200 with an empty or foreign body, or a Messages stream
// of only message_stop, fails over; never an empty success.
func (e *env) foreignAnswers(t *testing.T) {
	for _, name := range []string{"empty-openai", "empty-anthropic", "empty-gemini", "foreign-openai", "foreign-anthropic",
		"foreign-gemini", "foreignsse-openai", "foreignsse-anthropic", "foreignsse-gemini", "stoponly-anthropic"} {
		for _, stream := range []bool{false, true} {
			r := e.g.chat(t, "h-"+name, stream, 20)
			failedOver(t, r, "h-"+name)
		}
		if n := e.hostile.count(name); n != 2 {
			t.Errorf("%s was asked %d times, want 2", name, n)
		}
	}
}

// redirects: a 307 to another host is a failure, never followed.
func (e *env) redirects(t *testing.T) {
	for _, name := range []string{"redirect-openai", "redirect-anthropic", "redirect-gemini"} {
		for _, stream := range []bool{false, true} {
			r := e.g.chat(t, "h-"+name, stream, 20)
			failedOver(t, r, "h-"+name)
			noProviderHeaders(t, r, e.hostile.elsewhere.URL)
		}
	}
	if n := e.hostile.elsewhereHits.Load(); n != 0 {
		t.Errorf("the redirect target was contacted %d times", n)
	}
}

// noProviderHeaders checks that none of a provider's header values (nor
// any of extra) reached the caller.
func noProviderHeaders(t *testing.T, r *reply, extra ...string) {
	t.Helper()
	for name, vs := range r.header {
		for _, v := range vs {
			bad := strings.Contains(v, secretMarker) || strings.Contains(v, hugeRetry) || strings.Contains(v, "forged") ||
				strings.HasPrefix(name, "X-Junk") || name == "X-Long" || name == "X-Odd" || name == "Set-Cookie"
			for _, x := range extra {
				bad = bad || strings.Contains(v, x)
			}
			if bad {
				t.Errorf("the caller got the provider's header %s: %s", name, clip(v, 100))
			}
		}
	}
}

// injectedHeaders: a provider's headers (its request id, organisation,
// cookies, forged spillway headers, odd and huge values) never reach the
// caller, and an absurd Retry-After is neither relayed nor waited for.
func (e *env) injectedHeaders(t *testing.T) {
	for _, name := range []string{"headers", "hugeheaders"} {
		for _, stream := range []bool{false, true} {
			r := e.g.chat(t, "h-"+name, stream, 20)
			if r.status != http.StatusOK || r.text == "" {
				t.Errorf("%s stream %v: %s", name, stream, r)
			}
			if name == "headers" && (r.trail() != "h-headers=ok" || r.text != "Hello") {
				t.Errorf("%s stream %v: want the provider's answer: %s", name, stream, r)
			}
			t.Logf("%s stream %v: %d, trail %q", name, stream, r.status, r.trail())
			noProviderHeaders(t, r)
		}
	}
	start := time.Now()
	for _, name := range []string{"retry429", "retry503"} {
		for i, stream := range []bool{false, true} {
			r := e.g.chat(t, "h-"+name, stream, 20)
			if i == 0 {
				failedOver(t, r, "h-"+name)
			} else if r.status != http.StatusOK || !strings.HasSuffix(r.trail(), "secondary=ok") {
				// Throttled after the 429: skipped, or tried again.
				t.Errorf("%s stream %v: want the secondary's answer: %s", name, stream, r)
			}
			if r.took > 2*time.Second {
				t.Errorf("%s stream %v: answered after %v", name, stream, r.took)
			}
			t.Logf("%s stream %v: %d, trail %q, in %v", name, stream, r.status, r.trail(), r.took.Round(time.Millisecond))
			noProviderHeaders(t, r)
		}
	}
	// The absurd Retry-After was capped: the deployment is back within
	// minutes, not in 31,000 years.
	var rep healthReport
	e.g.adminGet(t, "/v1/admin/health", &rep)
	for _, st := range rep.Deployments {
		if st.Deployment != "h-retry429" && st.Deployment != "h-retry503" {
			continue
		}
		for _, at := range []*time.Time{st.RetryAt, st.ThrottledUntil} {
			if at != nil && at.After(start.Add(10*time.Minute)) {
				t.Errorf("%s: %s until %v", st.Deployment, st.State, at)
			}
		}
		t.Logf("%s: state %s, retry_at %v, throttled_until %v", st.Deployment, st.State, st.RetryAt, st.ThrottledUntil)
	}
}

// endlessBody: a provider that streams text forever, asked for 50
// tokens, is cut and the answer ends as length, streamed or not.
func (e *env) endlessBody(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := e.g.chat(t, "h-endless", stream, 50)
		if r.status != http.StatusOK || r.finish != "length" || r.trail() != "h-endless=ok" || stream && !r.done {
			t.Errorf("stream %v: %s", stream, r)
		}
		if words := len(strings.Fields(r.text)); words == 0 || words > 100 {
			t.Errorf("stream %v: %d words reached the caller for max_tokens 50", stream, words)
		}
		if r.took > 5*time.Second {
			t.Errorf("stream %v: answered after %v", stream, r.took)
		}
		t.Logf("stream %v: %d words, finish %q, in %v", stream, len(strings.Fields(r.text)), r.finish, r.took.Round(time.Millisecond))
	}
}

// oversizedAnswer: a whole answer past the gateway's size bound (no
// max_tokens anywhere) fails over in bounded time and memory.
func (e *env) oversizedAnswer(t *testing.T) {
	r := e.g.chat(t, "h-oversized", false, 0)
	if r.status == http.StatusOK {
		failedOver(t, r, "h-oversized")
	} else if r.status != http.StatusBadGateway {
		t.Errorf("want a failover or 502: %s", r)
	}
	t.Logf("%d, trail %q, in %v", r.status, r.trail(), r.took.Round(time.Millisecond))
}

// contentAfterFinish: what a provider sends after its stop reason is not
// part of the answer.
func (e *env) contentAfterFinish(t *testing.T) {
	for _, wire := range []string{"openai", "anthropic", "gemini"} {
		for _, stream := range []bool{false, true} {
			name := "h-afterfinish-" + wire
			r := e.g.chat(t, name, stream, 20)
			if r.status != http.StatusOK || r.text != "Hello" || r.finish != "stop" || r.trail() != name+"=ok" {
				t.Errorf("%s stream %v: %s", wire, stream, r)
			}
		}
	}
}

// ignoredMaxTokens: a provider that ignores max_tokens 50 is cut, the
// answer ends as length, and the ledger bills at most 50 output tokens.
func (e *env) ignoredMaxTokens(t *testing.T) {
	m := e.mocks["ignore"]
	if err := m.SetFault("tokens=5000;ignore_limit"); err != nil {
		t.Fatal(err)
	}
	defer m.SetFault("")
	for _, stream := range []bool{false, true} {
		before := e.usageReport(t)["ignore"]
		r := e.g.chat(t, "ignore", stream, 50)
		if r.status != http.StatusOK || r.finish != "length" || r.trail() != "ignore=ok" {
			t.Errorf("stream %v: %s", stream, r)
		}
		if words := len(strings.Fields(r.text)); words > 100 {
			t.Errorf("stream %v: %d words reached the caller for max_tokens 50", stream, words)
		}
		if r.usage != nil && r.usage.CompletionTokens > 50 {
			t.Errorf("stream %v: the caller was shown %d output tokens", stream, r.usage.CompletionTokens)
		}
		after := e.usageReport(t)["ignore"]
		if after.Requests != before.Requests+1 || after.OutputTokens-before.OutputTokens > 50 {
			t.Errorf("stream %v: usage went from %+v to %+v: want one request of at most 50 output tokens", stream, before, after)
		}
		t.Logf("stream %v: %d words, usage shown %+v, ledger output tokens +%d", stream, len(strings.Fields(r.text)), r.usage, after.OutputTokens-before.OutputTokens)
	}
}

// healthReport is GET /v1/admin/health, as much of it as the suite reads.
type healthReport struct {
	Deployments []struct {
		Deployment     string     `json:"deployment"`
		State          string     `json:"state"`
		Reason         string     `json:"reason"`
		RetryAt        *time.Time `json:"retry_at"`
		ThrottledUntil *time.Time `json:"throttled_until"`
		Healthy        bool       `json:"healthy"`
	} `json:"deployments"`
}
