package sticky

import (
	"hash/maphash"

	"github.com/cespare/xxhash/v2"

	"github.com/spillway-gw/spillway/internal/clock"
)

// PinMirror shares pins with the other replicas (internal/redisstate
// implements it). PublishPin must not block.
type PinMirror interface {
	PublishPin(k Key, deployment string, expiresUnixNano int64)
}

// NewShared is New for a store whose pins are shared across replicas:
// conversation keys are derived with seed, which every replica must use
// alike (a store from New seeds its keys at random, so its keys mean
// nothing to another process).
func NewShared(capacity int, c clock.Passive, seed uint64) *Store {
	s := New(capacity, c)
	s.shared, s.sharedSeed = true, seed
	return s
}

// SetMirror publishes every pin recorded here through m (nil: none). Call
// it before serving.
func (s *Store) SetMirror(m PinMirror) { s.mirror = m }

// Adopt applies a pin another replica recorded (not published again). A
// pin already expired is ignored.
func (s *Store) Adopt(k Key, deployment string, expiresUnixNano int64) {
	if s.cap == 0 || deployment == "" || expiresUnixNano <= s.clock.Now().UnixNano() {
		return
	}
	s.put(k, deployment, expiresUnixNano)
}

// keyHash derives keys: with the store's own maphash seed, or with xxhash
// on the seed every replica shares. It lives on the caller's stack.
type keyHash struct {
	shared bool
	m      maphash.Hash
	x      xxhash.Digest
}

func (h *keyHash) init(s *Store) {
	h.shared = s.shared
	if h.shared {
		h.x.ResetWithSeed(s.sharedSeed)
		return
	}
	h.m.SetSeed(s.seed)
}

func (h *keyHash) WriteString(v string) {
	if h.shared {
		_, _ = h.x.WriteString(v)
		return
	}
	h.m.WriteString(v)
}

func (h *keyHash) WriteByte(b byte) error {
	if h.shared {
		_, _ = h.x.Write([]byte{b})
		return nil
	}
	return h.m.WriteByte(b)
}

func (h *keyHash) Write(b []byte) {
	if h.shared {
		_, _ = h.x.Write(b)
		return
	}
	_, _ = h.m.Write(b)
}

func (h *keyHash) Sum64() uint64 {
	if h.shared {
		return h.x.Sum64()
	}
	return h.m.Sum64()
}
