// Package accesslog decides, per request, whether its access-log line is
// written: a sample rate per outcome class (log.access), checked with one
// comparison and, for a rate strictly between 0 and 1, one random draw.
package accesslog

import (
	"math"
	"math/rand/v2"
	"strings"
)

// Outcome classes, as log.access names them.
const (
	ClassOK          = "ok"           // answered: 2xx and not broken
	ClassClientError = "client_error" // refused or abandoned on the caller's side: 4xx, 499
	ClassError       = "error"        // failed on the gateway's or a provider's side: 5xx, a broken stream
)

// Sampler keeps a share of each class's lines. A nil *Sampler keeps
// every line. It is safe for concurrent use and never modified after New.
type Sampler struct {
	// thresholds per class (ok, client error, error): a line is kept when
	// a uniform 64-bit draw is below it; always/never skip the draw.
	t [3]threshold
}

type threshold struct {
	always, never bool
	below         uint64
}

// New returns a sampler keeping the given shares (0 to 1; outside that
// range clamped) of lines whose outcome is ok, a client error, or an
// error. Every rate 1 returns nil: keep everything, no work per request.
func New(ok, clientError, err float64) *Sampler {
	if ok >= 1 && clientError >= 1 && err >= 1 {
		return nil
	}
	s := &Sampler{}
	for i, r := range [3]float64{ok, clientError, err} {
		switch {
		case r >= 1:
			s.t[i].always = true
		case !(r > 0): // 0, negative or NaN
			s.t[i].never = true
		default:
			s.t[i].below = uint64(r * math.MaxUint64)
		}
	}
	return s
}

// Class is the outcome class of a request that ended with status and
// outcome (the access line's fields): a stream that broke after its 200
// ("interrupted_...") is an error.
func Class(status int, outcome string) int {
	switch {
	case status >= 500 || strings.HasPrefix(outcome, "interrupted"):
		return 2
	case status >= 400:
		return 1
	}
	return 0
}

// Keep reports whether this request's line is written.
func (s *Sampler) Keep(status int, outcome string) bool {
	if s == nil {
		return true
	}
	t := &s.t[Class(status, outcome)]
	if t.always {
		return true
	}
	if t.never {
		return false
	}
	return rand.Uint64() < t.below
}
