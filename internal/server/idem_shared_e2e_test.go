package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/server"
)

// sharedDialects are the three caller dialects, each with a request body
// and the mark of its error shape.
var sharedDialects = []struct{ name, path, body, shape string }{
	{"openai chat", "/v1/chat/completions", `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, `{"error":{`},
	{"openai responses", "/v1/responses", `{"model":"` + publicModel + `","max_output_tokens":16,"input":"hi"}`, `{"error":{`},
	{"anthropic messages", "/v1/messages", `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, `{"type":"error","error":{`},
}

// postTo sends body to path on this replica, with an Idempotency-Key when
// ik is set, and reads the whole answer.
func (r *replica) postTo(t *testing.T, path, body, ik string) raw {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.gw.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("anthropic-version", "2023-06-01")
	if ik != "" {
		req.Header.Set("Idempotency-Key", ik)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return raw{status: resp.StatusCode, header: resp.Header, body: b}
}

// Redis stopped, or hanging (slower than shared_state.timeout): a request
// with an Idempotency-Key is refused with 503 idempotency_unavailable in
// its dialect, with Retry-After, on every replica, and the provider sees
// nothing; without a key it is served. With idempotency_when_down local
// the old behaviour: the key is this replica's alone, and its retry on
// another replica runs again. Once Redis returns, keyed requests are
// served and replay across replicas again, a key refused meanwhile
// included (nothing ran under it).
func TestReplicasIdempotencyRedisDown(t *testing.T) {
	for _, fault := range []string{"stopped", "hanging"} {
		t.Run(fault, func(t *testing.T) {
			h, reps, proxy := newReplicas(t, 2, nil, rungSpec{"primary", "openai"})
			a, b := reps[0], reps[1]
			calls := func() int { return h.mocks["primary"].Count() }
			if fault == "stopped" {
				proxy.Cut(true)
			} else {
				proxy.Hang(true)
			}
			for i, d := range sharedDialects {
				ik := "down-" + fault + "-" + strconv.Itoa(i)
				before := calls()
				for _, r := range []*replica{a, b} { // the first try, then its retry elsewhere
					got := r.postTo(t, d.path, d.body, ik)
					if got.status != http.StatusServiceUnavailable || !strings.HasPrefix(string(got.body), d.shape) ||
						!strings.Contains(string(got.body), `"code":"idempotency_unavailable"`) || !strings.Contains(string(got.body), "across replicas") {
						t.Fatalf("%s on %s, Redis %s: %d %s; want 503 idempotency_unavailable in the dialect's shape", d.name, r.name, fault, got.status, got.body)
					}
					if got.header.Get("Retry-After") != "1" || got.header.Get(idempotency.HeaderShouldRetry) == "false" {
						t.Errorf("%s on %s: Retry-After %q, X-Should-Retry %q; want 1 and unset (the SDKs retry)", d.name, r.name,
							got.header.Get("Retry-After"), got.header.Get(idempotency.HeaderShouldRetry))
					}
				}
				if n := calls() - before; n != 0 {
					t.Errorf("%s: the provider saw %d requests for a refused key", d.name, n)
				}
				// Without a key: served.
				if got := a.postTo(t, d.path, d.body, ""); got.status != 200 {
					t.Errorf("%s without a key, Redis %s: %d %s", d.name, fault, got.status, got.body)
				}
				if n := calls() - before; n != 1 {
					t.Errorf("%s without a key: the provider saw %d requests, want 1", d.name, n)
				}
			}
			for _, r := range reps {
				if ok, _ := r.health.Check("primary"); !ok {
					t.Errorf("%s: the refusals counted against the provider's health", r.name)
				}
				if v := r.metric(t, `spillway_shared_state_idempotency_unavailable_total{action="refused"}`); v != "3" {
					t.Errorf("%s: refused metric %q, want 3", r.name, v)
				}
			}

			// idempotency_when_down local: the old behaviour, an explicit choice.
			for _, r := range reps {
				r.idem.SetDownPolicy(idempotency.DownLocal)
			}
			before := calls()
			for _, r := range []*replica{a, a, b} {
				if got := r.postTo(t, sharedDialects[0].path, sharedDialects[0].body, "local-"+fault); got.status != 200 {
					t.Fatalf("local policy on %s: %d %s", r.name, got.status, got.body)
				}
			}
			if n := calls() - before; n != 2 {
				t.Errorf("local policy: the provider ran %d times for one key sent to A, A and B; want 2 (A's retry replayed, B's ran again)", n)
			}
			if v := b.metric(t, `spillway_shared_state_idempotency_unavailable_total{action="local"}`); v != "1" {
				t.Errorf("B: local metric %q, want 1", v)
			}
			for _, r := range reps {
				r.idem.SetDownPolicy(idempotency.DownRefuse)
			}

			// Redis returns: keyed requests are served and replay across replicas.
			if fault == "stopped" {
				proxy.Cut(false)
			} else {
				proxy.Hang(false)
			}
			for _, r := range reps {
				waitUntil(t, 10*time.Second, r.name+" shares state again", r.shared.Up)
			}
			for i, d := range sharedDialects {
				for _, ik := range []string{"down-" + fault + "-" + strconv.Itoa(i), "back-" + fault + "-" + strconv.Itoa(i)} {
					before := calls()
					first := a.postTo(t, d.path, d.body, ik)
					again := b.postTo(t, d.path, d.body, ik)
					if first.status != 200 || again.status != 200 || again.header.Get(idempotency.HeaderReplayed) != "true" ||
						again.header.Get("X-Request-Id") != first.header.Get("X-Request-Id") || string(again.body) != string(first.body) {
						t.Errorf("%s, key %s once Redis returned: A %d, B %d replayed %q; want B to replay A's answer",
							d.name, ik, first.status, again.status, again.header.Get(idempotency.HeaderReplayed))
					}
					if n := calls() - before; n != 1 {
						t.Errorf("%s, key %s once Redis returned: the provider ran %d times, want 1", d.name, ik, n)
					}
				}
			}
		})
	}
}

// Redis slower than shared_state.timeout now and then (a share of its
// replies held back past the timeout, as on a loaded machine): each key is
// sent to A, then retried on B. With idempotency_when_down local, retries
// run and bill again; with refuse (the default), none does: each key runs
// at most once, and a request whose key cannot be checked is refused.
func TestReplicasIdempotencySlowRedis(t *testing.T) {
	const keys = 30
	h, reps, proxy := newReplicasTimeout(t, 2, 50*time.Millisecond, nil, rungSpec{"primary", "openai"})
	a, b := reps[0], reps[1]
	calls := func() int { return h.mocks["primary"].Count() }
	defer proxy.Delay(0, 1)
	for _, share := range []float64{0.05, 0.3} {
		proxy.Delay(80*time.Millisecond, share)
		for _, policy := range []idempotency.DownPolicy{idempotency.DownLocal, idempotency.DownRefuse} {
			name := map[idempotency.DownPolicy]string{idempotency.DownLocal: "local", idempotency.DownRefuse: "refuse"}[policy]
			for _, r := range reps {
				r.idem.SetDownPolicy(policy)
			}
			var twice, refused, replayed, served int
			for i := range keys {
				ik := "slow-" + name + "-" + strconv.FormatFloat(share, 'f', -1, 64) + "-" + strconv.Itoa(i)
				before := calls()
				for _, r := range []*replica{a, b} {
					got := r.postTo(t, sharedDialects[0].path, sharedDialects[0].body, ik)
					switch {
					case got.status == http.StatusServiceUnavailable && strings.Contains(string(got.body), "idempotency_unavailable"):
						refused++
					case got.status == 200 && got.header.Get(idempotency.HeaderReplayed) == "true":
						replayed++
					case got.status == 200:
						served++
					default:
						t.Errorf("%s, key %s on %s: %d %s", name, ik, r.name, got.status, got.body)
					}
				}
				if calls()-before > 1 {
					twice++
				}
			}
			t.Logf("Redis replies 80 ms late %.0f%% of the time (timeout 50 ms), policy %s: of %d keys each sent to A then B, %d ran twice; answers: %d run, %d replayed, %d refused",
				share*100, name, keys, twice, served, replayed, refused)
			if policy == idempotency.DownRefuse && twice != 0 {
				t.Errorf("refuse: %d of %d keys ran twice", twice, keys)
			}
		}
	}
}

// downShared is a shared store that cannot answer any claim.
type downShared struct{}

func (downShared) Claim(context.Context, string, string, [32]byte) (idempotency.SharedClaim, error) {
	return idempotency.SharedClaim{}, errors.New("shared store unreachable")
}
func (downShared) Wait(ctx context.Context, _, _ string) error { return ctx.Err() }
func (downShared) Finish(string, string, [32]byte, idempotency.SharedState, *idempotency.Recording, time.Duration) {
}

// Without Redis (a shared store that cannot answer): in each dialect,
// whole or streamed, a keyed request is refused with 503
// idempotency_unavailable before any provider (refuse), or served as
// before (local); a request without a key is served either way.
func TestIdempotencySharedUnavailable(t *testing.T) {
	for _, policy := range []idempotency.DownPolicy{idempotency.DownRefuse, idempotency.DownLocal} {
		store := idempotency.New(idempotency.Options{})
		store.SetShared(downShared{})
		store.SetDownPolicy(policy)
		h := newHarnessOpts(t, nil, func(o *server.Options) { o.Idempotency = store }, rungSpec{"primary", "openai"})
		for _, d := range sharedDialects {
			for _, stream := range []bool{false, true} {
				body := strings.Replace(d.body, `{"model"`, `{"stream":`+strconv.FormatBool(stream)+`,"model"`, 1)
				name := fmt.Sprintf("policy %d, %s, stream %v", policy, d.name, stream)
				before := h.counts()["primary"]
				resp, err := h.post(d.path, body, "Idempotency-Key", "k-"+d.path+strconv.FormatBool(stream), "anthropic-version", "2023-06-01")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				calls := h.counts()["primary"] - before
				if policy == idempotency.DownLocal {
					if resp.StatusCode != 200 || calls != 1 {
						t.Errorf("%s: %d after %d provider calls; want served", name, resp.StatusCode, calls)
					}
					continue
				}
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(string(b), d.shape) ||
					!strings.Contains(string(b), `"code":"idempotency_unavailable"`) || resp.Header.Get("Retry-After") != "1" || calls != 0 {
					t.Errorf("%s: %d %s (Retry-After %q), %d provider calls; want 503 idempotency_unavailable in the dialect's shape, none", name,
						resp.StatusCode, b, resp.Header.Get("Retry-After"), calls)
				}
				resp, err = h.post(d.path, body, "anthropic-version", "2023-06-01")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("%s without a key: %d", name, resp.StatusCode)
				}
			}
		}
		if st := store.Stats(); policy == idempotency.DownRefuse && st.SharedRefused != 6 || policy == idempotency.DownLocal && st.SharedLocal != 6 {
			t.Errorf("policy %d: Stats %+v, want 6 counted", policy, st)
		}
	}
}
