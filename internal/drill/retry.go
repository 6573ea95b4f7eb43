package drill

import (
	"fmt"
	"net/http"
)

// released reports whether an answer says that nothing went upstream for
// its request: a 429 or 5xx naming no attempt (no X-Spillway-Attempts). The
// gateway gives such a request's Idempotency-Key back instead of failing it
// closed (README, "Idempotency-Key": a refusal that sent nothing upstream
// releases the key): nothing can have been generated or billed under the
// key, and the caller was told to come back (503 no_healthy_deployment
// with Retry-After); replaying that refusal for the key's whole TTL would
// turn a second's outage into a day's for every SDK, which retries with
// the same key. So the retry runs afresh, as a request of its own, with its
// own request id and its own ledger row.
func released(a *result) bool {
	return a.kind == failed && (a.status >= 500 || a.status == http.StatusTooManyRequests) && a.attempts < 1
}

// rerunProblem says what is wrong with b, the retry under the same key of
// a released request a ("" = nothing). The key was given back, so the
// retry must run: an answer marked as a replay, or carrying a's request id,
// did not. Its answer is otherwise held to every invariant a first request
// is (buildReport) and its settlement expected in the ledger
// (expectations).
func rerunProblem(a, b *result) string {
	switch {
	case b.replayed:
		return fmt.Sprintf("the retry of %s was answered as an idempotent replay, though the first request sent nothing upstream (HTTP %d %s) and so released its key",
			a.requestID, a.status, a.errCode)
	case b.requestID != "" && b.requestID == a.requestID:
		return "the retry of " + a.requestID + " ran afresh under the original's request id"
	}
	return ""
}
