package sticky

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/clock/clocktest"
)

func text(role canonical.Role, s string) canonical.Message {
	return canonical.Message{Role: role, Content: []canonical.Part{canonical.TextPart(s)}}
}

// turn is the request of a conversation's n-th turn (1-based): the SDK
// pattern, each answer appended, then the next question.
func turn(system string, n int) *canonical.Request {
	r := &canonical.Request{Model: "m", System: system}
	for i := 1; i <= n; i++ {
		if i > 1 {
			r.Messages = append(r.Messages, text(canonical.RoleAssistant, fmt.Sprintf("answer %d", i-1)))
		}
		r.Messages = append(r.Messages, text(canonical.RoleUser, fmt.Sprintf("question %d", i)))
	}
	return r
}

// TestKey is what identifies a conversation, one case per rule.
func TestKey(t *testing.T) {
	s := New(10, nil)
	key := func(model, header string, r *canonical.Request) (Key, bool) { return s.Key(model, header, r) }
	first, ok := key("m", "", turn("sys", 1))
	if !ok {
		t.Fatal("a first turn has no key")
	}
	long := strings.Repeat("x", maxPromptBytes)
	tests := []struct {
		name   string
		model  string
		header string
		req    *canonical.Request
		ok     bool
		same   bool // the same key as the first turn of ("m", "sys")
	}{
		{name: "nil request", req: nil},
		{name: "embeddings", req: &canonical.Request{Embed: &canonical.EmbedInput{}}},
		{name: "nothing to hash", req: &canonical.Request{Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{{Type: canonical.PartImage, ImageURL: "https://x/i.png"}}}}}},
		{name: "header too long", header: strings.Repeat("h", MaxHeaderBytes+1), req: turn("sys", 1)},
		{name: "later turns repeat the first", model: "m", req: turn("sys", 10), ok: true, same: true},
		{name: "another system prompt", model: "m", req: turn("other", 3), ok: true},
		{name: "another first question", model: "m", req: &canonical.Request{System: "sys", Messages: []canonical.Message{text(canonical.RoleUser, "question 2")}}, ok: true},
		{name: "another model", model: "n", req: turn("sys", 1), ok: true},
		{name: "a header wins over the prompt", model: "m", header: "conv-1", req: turn("sys", 1), ok: true},
		{name: "a system prompt alone", model: "m", req: &canonical.Request{System: "sys"}, ok: true},
		{name: "a header alone", model: "m", header: strings.Repeat("h", MaxHeaderBytes), req: &canonical.Request{}, ok: true},
		{name: "a prompt past the bound", model: "m", req: turn(long+"tail", 1), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := key(tt.model, tt.header, tt.req)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if ok && (k == first) != tt.same {
				t.Errorf("same key as the first turn: %v, want %v", k == first, tt.same)
			}
		})
	}
	// Bounded: bytes past 16 KiB are not read, but the length is.
	a, _ := key("m", "", turn(long+"aaaa", 1))
	b, _ := key("m", "", turn(long+"bbbb", 1))
	c, _ := key("m", "", turn(long+"ccccc", 1))
	if a != b || a == c {
		t.Errorf("past the bound: same length %v (want equal), other length %v (want different)", a == b, a == c)
	}
	// One header, one conversation, whatever the prompt.
	h1, _ := key("m", "conv-1", turn("sys", 1))
	h2, _ := key("m", "conv-1", turn("other", 4))
	if h1 != h2 {
		t.Error("the header's conversation changed with the prompt")
	}
}

func TestContinues(t *testing.T) {
	tool := turn("sys", 1)
	tool.Messages = append(tool.Messages, canonical.Message{Role: canonical.RoleTool, ToolCallID: "c1", Content: []canonical.Part{canonical.TextPart("42")}})
	for _, tt := range []struct {
		req  *canonical.Request
		want bool
	}{{turn("sys", 1), false}, {turn("sys", 2), true}, {tool, true}, {&canonical.Request{}, false}} {
		if got := Continues(tt.req); got != tt.want {
			t.Errorf("Continues(%d messages) = %v, want %v", len(tt.req.Messages), got, tt.want)
		}
	}
}

// TestStore: a pin is found until its TTL has passed since the turn that
// set it; a later turn moves and renews it; reading changes nothing.
func TestStore(t *testing.T) {
	clk := clocktest.New(time.Unix(1_800_000_000, 0))
	s := New(10, clk)
	if _, ok := s.Pinned(1); ok {
		t.Fatal("an empty store has a pin")
	}
	s.Record(1, "primary", time.Minute)
	if id, ok := s.Pinned(1); !ok || id != "primary" {
		t.Fatalf("pinned %q %v", id, ok)
	}
	clk.Advance(59 * time.Second)
	s.Record(1, "secondary", time.Minute) // moved, and renewed
	clk.Advance(59 * time.Second)
	if id, ok := s.Pinned(1); !ok || id != "secondary" {
		t.Fatalf("after a move: pinned %q %v", id, ok)
	}
	clk.Advance(time.Second)
	if id, ok := s.Pinned(1); ok {
		t.Fatalf("expired pin still found: %q", id)
	}
	// Nothing is recorded without a TTL, a deployment or a capacity.
	s.Record(2, "primary", 0)
	s.Record(3, "", time.Minute)
	none := New(0, clk)
	none.Record(4, "primary", time.Minute)
	if _, ok := s.Pinned(2); ok || none.Len() != 0 {
		t.Error("recorded a pin without a ttl or a capacity")
	}
	if _, ok := s.Pinned(3); ok {
		t.Error("recorded a pin without a deployment")
	}
}

// TestStoreEvictsLeastRecentlyServed: at capacity, the pin whose last
// turn is oldest goes; reading a pin does not make it recent.
func TestStoreEvictsLeastRecentlyServed(t *testing.T) {
	s := New(3, clocktest.New(time.Unix(1_800_000_000, 0)))
	for k := Key(1); k <= 3; k++ {
		s.Record(k, fmt.Sprint("d", k), time.Hour)
	}
	s.Record(1, "d1", time.Hour) // 1 served again: 2 is now the oldest
	s.Pinned(2)                  // a read is not a turn
	s.Record(4, "d4", time.Hour)
	want := map[Key]bool{1: true, 2: false, 3: true, 4: true}
	for k, live := range want {
		if _, ok := s.Pinned(k); ok != live {
			t.Errorf("pin %d held %v, want %v", k, ok, live)
		}
	}
	for k := Key(5); k < 100; k++ {
		s.Record(k, "d", time.Hour)
	}
	if s.Len() != 3 {
		t.Errorf("len %d, want the capacity 3", s.Len())
	}
	for k := Key(97); k < 100; k++ {
		if _, ok := s.Pinned(k); !ok {
			t.Errorf("recent pin %d evicted", k)
		}
	}
}

// TestStoreConcurrent is for the race detector: readers and writers on
// one store, past its capacity.
func TestStoreConcurrent(t *testing.T) {
	s := New(64, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := Key(i % 100)
				if g%2 == 0 {
					s.Record(k, "d", time.Minute)
				} else {
					s.Pinned(k)
				}
			}
		})
	}
	wg.Wait()
	if n := s.Len(); n > 64 {
		t.Errorf("len %d past the capacity", n)
	}
}

// A full store records and reads without allocating, in constant time.
func TestStoreAllocs(t *testing.T) {
	s := New(1000, nil)
	for k := range Key(1000) {
		s.Record(k, "d", time.Minute)
	}
	req := turn("sys", 3)
	k := Key(0)
	allocs := testing.AllocsPerRun(1000, func() {
		k++
		s.Record(k%5000, "d", time.Minute)
		s.Pinned(k % 5000)
		s.Key("m", "", req)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per record, read and key", allocs)
	}
}

func BenchmarkStore(b *testing.B) {
	for _, n := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprint("pins=", n), func(b *testing.B) {
			s := New(n, nil)
			for k := range Key(n) {
				s.Record(k, "d", time.Minute)
			}
			var k Key
			b.ReportAllocs()
			for b.Loop() {
				k = k*6364136223846793005 + 1442695040888963407
				s.Record(k%Key(2*n), "d", time.Minute)
				s.Pinned(k % Key(2*n))
			}
		})
	}
}

func BenchmarkKey(b *testing.B) {
	req := turn(strings.Repeat("You are a careful assistant. ", 100), 10)
	s := New(1, nil)
	b.ReportAllocs()
	for b.Loop() {
		s.Key("m", "", req)
	}
}
