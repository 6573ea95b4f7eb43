package drill

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// reply is one answer of a stand-in gateway to a Chat request.
type reply struct {
	status int
	id     string
	// attempts is X-Spillway-Attempts; 0: no header (nothing went
	// upstream).
	attempts int
	replayed bool
}

func (a reply) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", a.id)
	if a.replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if a.attempts > 0 {
		h.Set("X-Spillway-Model", testModel)
		h.Set("X-Spillway-Attempts", strconv.Itoa(a.attempts))
	}
	if a.status != http.StatusOK {
		code := map[int]string{429: "rate_limit_exceeded", 502: "upstream_error", 503: "no_healthy_deployment"}[a.status]
		if a.status == 429 || a.status == 503 {
			h.Set("Retry-After", "1")
		}
		w.WriteHeader(a.status)
		fmt.Fprintf(w, `{"error":{"message":"refused","type":"api_error","code":%q}}`, code)
		return
	}
	h.Set("X-Spillway-Deployment", "p")
	fmt.Fprintf(w, `{"object":"chat.completion","model":%q,"choices":[{"message":{"content":"mock p"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, testModel)
}

// TestIdempotentRetry: the drill sends an Idempotency-Key request, reads it
// to the end, then sends it again. The retry must replay the first answer
// exactly, except after a 429/5xx that names no attempt: nothing went
// upstream, the gateway released the key (README, "Idempotency-Key"), and
// the retry runs afresh as a request of its own. Under overload every
// circuit opens and idempotent requests meet 503 no_healthy_deployment
// often; the drill used to demand a replay there ("replay has request id
// B, the original A").
func TestIdempotentRetry(t *testing.T) {
	const A, B = "01original", "01retry"
	cases := []struct {
		name          string
		first, retry  reply
		flagged       bool // invReplays broken
		rerun         bool // the retry counted as a request of its own
		wantInMessage string
	}{
		// Unhappy paths first: each is a gateway that broke its promise.
		{"served, then ran again", reply{200, A, 1, false}, reply{200, B, 1, false}, true, false, "replay has request id " + B},
		{"failed upstream, then ran again", reply{502, A, 3, false}, reply{200, B, 1, false}, true, false, "replay has request id " + B},
		{"503 after an attempt, then ran again", reply{503, A, 1, false}, reply{200, B, 1, false}, true, false, "replay has request id " + B},
		{"served, then replayed unmarked", reply{200, A, 1, false}, reply{200, A, 1, false}, true, false, "not marked Idempotent-Replayed"},
		{"released, then the refusal replayed", reply{503, A, 0, false}, reply{503, A, 0, true}, true, true, "answered as an idempotent replay"},
		{"released, then ran under the original's id", reply{503, A, 0, false}, reply{200, A, 1, false}, true, true, "under the original's request id"},
		// The promises kept.
		{"served, then replayed", reply{200, A, 1, false}, reply{200, A, 1, true}, false, false, ""},
		{"failed upstream, then replayed", reply{502, A, 3, false}, reply{502, A, 3, true}, false, false, ""},
		{"503 no_healthy_deployment released the key, the retry served", reply{503, A, 0, false}, reply{200, B, 1, false}, false, true, ""},
		{"429 released the key, the retry refused again", reply{429, A, 0, false}, reply{429, B, 0, false}, false, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			keys := make(chan string, 2)
			gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				keys <- r.Header.Get("Idempotency-Key")
				if n.Add(1) == 1 {
					tc.first.write(w)
				} else {
					tc.retry.write(w)
				}
			}))
			defer gw.Close()
			d := &driver{t: Target{BaseURL: gw.URL, Key: "k", Model: testModel, Rungs: testRungs()}, cfg: Config{RequestTimeout: 10 * time.Second},
				client: gw.Client(), bases: []string{gw.URL}, nonce: "n"}
			var buf []byte
			r := d.send(context.Background(), 7, Shape{Dialect: Chat, MaxTokens: 16, Idem: true}, &buf)
			if n.Load() != 2 {
				t.Fatalf("%d requests sent, want the first and its retry", n.Load())
			}
			if k1, k2 := <-keys, <-keys; k1 == "" || k1 != k2 {
				t.Fatalf("Idempotency-Keys %q and %q", k1, k2)
			}
			if (r.replay != "") != tc.flagged || !strings.Contains(r.replay, tc.wantInMessage) {
				t.Errorf("replay verdict %q, want flagged=%v containing %q", r.replay, tc.flagged, tc.wantInMessage)
			}
			if (r.rerun != nil) != tc.rerun {
				t.Fatalf("rerun %v, want %v", r.rerun != nil, tc.rerun)
			}
			rep := buildReport(Config{Concurrency: 1}, d.t, nil, []result{r}, nil, time.Second)
			if broken := rep.Broken(); slices.Contains(broken, invReplays) != tc.flagged || (!tc.flagged && len(broken) > 0) {
				t.Errorf("broken %v", broken)
			}
			exp := expectations([]result{r})
			wantIDs := []string{A}
			if tc.rerun {
				wantIDs = append(wantIDs, tc.retry.id)
				if rep.Reruns != 1 || rep.Replays != 0 {
					t.Errorf("reruns %d, replays %d", rep.Reruns, rep.Replays)
				}
			} else if rep.Reruns != 0 || rep.Replays != 1 {
				t.Errorf("reruns %d, replays %d", rep.Reruns, rep.Replays)
			}
			var ids []string
			for _, e := range exp {
				ids = append(ids, e.RequestID)
			}
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("the ledger check expects %v, want %v", ids, wantIDs)
			}
		})
	}
}

// TestRerunSettledIsExpected: a retry that ran afresh after a released key
// settles a row of its own, and the ledger check counts it as a request
// the caller saw. Without it the drill reported "1 settled rows belong to
// no request a caller saw (only 0 requests went unanswered)".
func TestRerunSettledIsExpected(t *testing.T) {
	rs := testRungs()
	cost := rs[0].Deployment.CostMicroUSD(100, 0, 0, 24)
	rerun := &result{shape: Shape{Dialect: Chat, Idem: true}, kind: okAnswer, status: 200, requestID: "R", model: testModel, bodyModel: testModel,
		deployment: "p", attempts: 1, trail: "p=ok", usage: Usage{Input: 100, Output: 24}, cost: cost, hasCost: true}
	first := result{shape: Shape{Dialect: Chat, Idem: true}, kind: failed, status: 503, errCode: "no_healthy_deployment", requestID: "E", attempts: -1, rerun: rerun}
	// Its first request was refused before any reservation: no row.
	f := newFixture()
	now := time.Unix(1_800_000_000, 0).UTC()
	f.batch.Reservations = append(f.batch.Reservations, ledger.Reservation{RequestID: "R", KeyID: "k", Org: "o", Team: "t", PublicModel: testModel, AmountMicro: 10_000, CreatedAt: now})
	f.batch.Settlements = append(f.batch.Settlements, ledger.Settlement{
		Request: ledger.Request{RequestID: "R", Org: "o", Team: "t", KeyID: "k", PublicModel: testModel, ExactModel: testModel, Deployment: "p",
			Attempts: 1, Status: "ok", InputTokens: 100, OutputTokens: 24, CostMicroUSD: cost, CostStatus: "priced", ReservedMicroUSD: 10_000,
			StartedAt: now, FinishedAt: now},
		Attempts: []ledger.Attempt{{Seq: 0, Deployment: "p", HTTPStatus: 200, OutputTokens: 24, CostMicroUSD: cost, StartedAt: now}},
	})
	path := f.write(t)
	// Every request answered: no settled row can belong to an unanswered
	// one.
	f.expect = slices.DeleteFunc(f.expect, func(e Expect) bool { return e.RequestID == "" })
	for _, tc := range []struct {
		name   string
		rerun  *result
		broken []string
	}{
		{"the retry's answer forgotten", nil, []string{invSettledOnce}},
		{"the retry's answer expected", rerun, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := first
			r.rerun = tc.rerun
			rep, err := CheckLedger(context.Background(), path, testModel, rs, append(slices.Clone(f.expect), expectations([]result{r})...))
			if err != nil {
				t.Fatal(err)
			}
			var broken []string
			for _, inv := range rep.Invariants {
				if !inv.Pass {
					broken = append(broken, inv.Name)
					t.Logf("%s: %v", inv.Name, inv.Examples)
				}
			}
			if !slices.Equal(broken, tc.broken) {
				t.Errorf("broken %v, want %v", broken, tc.broken)
			}
		})
	}
}
