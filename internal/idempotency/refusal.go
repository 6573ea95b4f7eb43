package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
)

// Refusal says why a key cannot answer a request. Its value is the stable
// error code the caller sees.
type Refusal string

const (
	// RefusedInvalidKey: the key is empty, longer than MaxKeyLen or holds a
	// byte outside printable ASCII. 400.
	RefusedInvalidKey Refusal = "invalid_idempotency_key"
	// RefusedConflict: the key was used with a different request. 409.
	RefusedConflict Refusal = "idempotency_key_reused"
	// RefusedAbandoned: the key's first request ended before its answer was
	// complete (its caller went away); it is not run again. 409.
	RefusedAbandoned Refusal = "idempotency_key_abandoned"
	// RefusedNotKept: the key's first answer was too large to keep for
	// replay; it is not run again. 409.
	RefusedNotKept Refusal = "idempotency_answer_not_kept"
	// RefusedUnavailable: the key is shared between replicas and the shared
	// store could not say whether it was used elsewhere (see Shared and
	// DownRefuse); nothing ran. 503 with Retry-After, and the only refusal
	// that is not Final: a retry with the same key may run.
	RefusedUnavailable Refusal = "idempotency_unavailable"
)

// UnavailableRetryAfter is the delay RefusedUnavailable asks for: the
// shared store's default retry interval (shared_state.retry_every).
const UnavailableRetryAfter = time.Second

// MaxKeyLen is the longest Idempotency-Key accepted, in bytes.
const MaxKeyLen = 255

// HeaderReplayed marks a replayed answer.
const HeaderReplayed = "Idempotent-Replayed"

// HeaderShouldRetry tells the OpenAI and Anthropic SDKs whether to retry. A
// replay and a Final refusal are final under their key (a retry with the
// same key gets the same answer), so both say "false"; otherwise the SDKs
// would retry 409s and 5xx in vain. RefusedUnavailable leaves it unset, so
// the SDKs retry its 503 after Retry-After as they retry any 503.
const HeaderShouldRetry = "X-Should-Retry"

// Final reports whether a retry with the same key gets the same refusal
// (every refusal but RefusedUnavailable).
func (r Refusal) Final() bool { return r != RefusedUnavailable }

// Public is the error the caller is told, before a dialect gives it its wire
// shape; nil for the zero Refusal. Callers should also set HeaderShouldRetry
// to "false" on a Final one.
func (r Refusal) Public() *failure.Public {
	var msg string
	status := http.StatusConflict
	switch r {
	case "":
		return nil
	case RefusedUnavailable:
		return &failure.Public{Status: http.StatusServiceUnavailable, Code: string(r), RetryAfter: UnavailableRetryAfter,
			Message: "this gateway's replicas share Idempotency-Keys and cannot check this one across replicas right now, so the request was not run (nothing was generated or billed); retry with the same key after the delay in the Retry-After header"}
	case RefusedInvalidKey:
		status = http.StatusBadRequest
		msg = "the Idempotency-Key header must be 1 to 255 printable ASCII characters"
	case RefusedConflict:
		msg = "this Idempotency-Key was already used with a different request; send a new key for a new request"
	case RefusedAbandoned:
		msg = "the first request with this Idempotency-Key ended before its answer was complete; it is not run again under this key; send a new key to retry"
	case RefusedNotKept:
		msg = "the answer to the first request with this Idempotency-Key was too large to keep for replay; it is not run again under this key; send a new key to run it again"
	default:
		msg = "the Idempotency-Key cannot be used for this request"
	}
	return &failure.Public{Status: status, Code: string(r), Message: msg, Param: "Idempotency-Key"}
}

// validKey accepts 1 to MaxKeyLen bytes of printable ASCII (space included),
// the set every client library can send in a header unchanged.
func validKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// RequestHash is the hash Begin compares: SHA-256 over the endpoint, each
// meaning-bearing header value in parts (e.g. anthropic-version) and the raw
// body, each length-prefixed so no two different inputs collide by
// concatenation. The endpoint is included so one key cannot replay a Chat
// answer to a Responses request.
func RequestHash(endpoint string, body []byte, parts ...string) [32]byte {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(endpoint)
	for _, p := range parts {
		field(p)
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(body)))
	h.Write(n[:])
	h.Write(body)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
