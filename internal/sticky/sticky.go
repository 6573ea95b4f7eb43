// Package sticky keeps conversation pins: which deployment served a
// conversation's last turn, so that its next turn goes there first while
// the provider's prompt cache for it is warm.
//
// A Store is bounded in count (the least recently served pin is evicted
// first, in O(1)) and in time (a pin lives for its route's TTL after the
// turn that set it); it holds no content, only a 64-bit hash of the
// conversation's identity and a deployment id, about 60 bytes a pin. Pins
// live in this process's memory: a restart forgets them. Replicas share
// them through a PinMirror (see NewShared): every replica then derives the
// same key for a conversation and adopts the pins the others record.
package sticky

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/clock"
)

// Bounds on what a key is derived from.
const (
	// MaxHeaderBytes bounds a conversation header's value; the server
	// refuses a longer one.
	MaxHeaderBytes = 256
	// maxPromptBytes bounds the bytes hashed of the system prompt and of
	// the first user turn, each; their whole lengths are hashed too.
	maxPromptBytes = 16 << 10
)

// Key identifies a conversation within one Store (its hash seed is the
// store's own).
type Key uint64

// Store maps conversations to the deployment that served their last turn.
// It is safe for concurrent use: one mutex, held for a map lookup and a
// few field updates.
type Store struct {
	clock clock.Passive
	seed  maphash.Seed
	cap   int
	// shared: keys are derived with xxhash on sharedSeed, the same on
	// every replica (see NewShared), instead of this store's own seed.
	shared     bool
	sharedSeed uint64
	mirror     PinMirror

	mu    sync.Mutex
	index map[Key]int32
	// ents grows up to cap; entries are linked by index, most recently
	// served first, and an evicted entry's slot is reused.
	ents       []entry
	head, tail int32 // -1 when empty
}

type entry struct {
	key        Key
	deployment string
	expires    int64 // Unix nanoseconds
	prev, next int32
}

// New returns an empty store of at most capacity pins (0 or less: a store
// that keeps none), on clock c (nil: the system clock).
func New(capacity int, c clock.Passive) *Store {
	if c == nil {
		c = clock.Real{}
	}
	return &Store{clock: c, seed: maphash.MakeSeed(), cap: max(capacity, 0), index: map[Key]int32{}, head: -1, tail: -1}
}

// Key derives the conversation key of a request to the public model
// model: from header, the caller's conversation id, when it is not empty;
// else from the system prompt and the first user turn, which every later
// turn of a conversation repeats. ok is false when the request has neither
// (nothing identifies a conversation), for embeddings, and for a header
// longer than MaxHeaderBytes. Bounded: at most MaxHeaderBytes, or twice
// 16 KiB of the prompt, are read.
func (s *Store) Key(model, header string, req *canonical.Request) (Key, bool) {
	if req == nil || req.Embed != nil || len(header) > MaxHeaderBytes {
		return 0, false
	}
	var h keyHash
	h.init(s)
	h.WriteString(model)
	h.WriteByte(0)
	if header != "" {
		h.WriteByte('h')
		h.WriteString(header)
		return Key(h.Sum64()), true
	}
	h.WriteByte('p')
	n := writeBounded(&h, req.System, maxPromptBytes)
	h.WriteByte(0)
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != canonical.RoleUser {
			continue
		}
		budget, total := maxPromptBytes, 0
		for _, p := range m.Content {
			if p.Type != canonical.PartText {
				continue
			}
			budget -= writeBounded(&h, p.Text, budget)
			total += len(p.Text)
			n += len(p.Text)
		}
		writeLen(&h, total)
		break
	}
	if n == 0 {
		return 0, false
	}
	return Key(h.Sum64()), true
}

// writeBounded hashes at most limit bytes of s, then its length, and
// returns how many bytes it hashed.
func writeBounded(h *keyHash, s string, limit int) int {
	limit = max(min(limit, len(s)), 0)
	h.WriteString(s[:limit])
	writeLen(h, len(s))
	return limit
}

func writeLen(h *keyHash, n int) {
	var b [8]byte
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	h.Write(b[:])
}

// Continues reports whether req continues a conversation: it carries an
// earlier answer (an assistant turn or a tool result). A first turn is
// never routed by a pin derived from its prompt, so that single-turn
// traffic sharing one prompt (a batch) is never held on one rung.
func Continues(req *canonical.Request) bool {
	for i := range req.Messages {
		if r := req.Messages[i].Role; r == canonical.RoleAssistant || r == canonical.RoleTool {
			return true
		}
	}
	return false
}

// Pinned returns the deployment that served the conversation's last turn,
// while its pin lives. It changes nothing (route explain calls it too).
func (s *Store) Pinned(k Key) (deployment string, ok bool) {
	now := s.clock.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[k]
	if !ok {
		return "", false
	}
	e := &s.ents[i]
	if now >= e.expires {
		return "", false
	}
	return e.deployment, true
}

// put pins k to deployment until expires (Unix nanoseconds).
func (s *Store) put(k Key, deployment string, expires int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[k]; ok {
		e := &s.ents[i]
		e.deployment, e.expires = deployment, expires
		s.unlink(i)
		s.pushFront(i)
		return
	}
	var i int32
	if len(s.ents) < s.cap {
		s.ents = append(s.ents, entry{})
		i = int32(len(s.ents) - 1)
	} else {
		i = s.tail
		s.unlink(i)
		delete(s.index, s.ents[i].key)
	}
	s.ents[i] = entry{key: k, deployment: deployment, expires: expires}
	s.pushFront(i)
	s.index[k] = i
}

// Record pins the conversation to deployment for ttl from now: called once
// a rung served one of its turns. It evicts the least recently served pin
// when the store is full. With a mirror, the other replicas adopt it.
func (s *Store) Record(k Key, deployment string, ttl time.Duration) {
	if s.cap == 0 || ttl <= 0 || deployment == "" {
		return
	}
	expires := s.clock.Now().Add(ttl).UnixNano()
	s.put(k, deployment, expires)
	if s.mirror != nil {
		s.mirror.PublishPin(k, deployment, expires)
	}
}

// Len is the number of pins held, live or expired but not yet evicted.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.index)
}

// Cap is the most pins the store holds.
func (s *Store) Cap() int { return s.cap }

func (s *Store) unlink(i int32) {
	e := &s.ents[i]
	if e.prev >= 0 {
		s.ents[e.prev].next = e.next
	} else {
		s.head = e.next
	}
	if e.next >= 0 {
		s.ents[e.next].prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (s *Store) pushFront(i int32) {
	e := &s.ents[i]
	e.prev, e.next = -1, s.head
	if s.head >= 0 {
		s.ents[s.head].prev = i
	}
	s.head = i
	if s.tail < 0 {
		s.tail = i
	}
}
