package engine

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Whole answers share one memory bound: an answer that would pass it
// fails as gateway_busy (no failover, not the provider's fault), and what
// an answer held comes back when it is released or its attempt reset.
func TestAnswerMemoryIsShared(t *testing.T) {
	mem := newAnswerMemory(12 << 20)
	chunk := &canonical.Event{Kind: canonical.EventTextDelta, Text: strings.Repeat("x", 64<<10)}
	feed := func(c *collector, bytes int) *failure.Error {
		for sent := 0; sent < bytes; sent += len(chunk.Text) {
			if fe := c.add(chunk); fe != nil {
				return fe
			}
		}
		return nil
	}
	small := newCollector(0)
	small.mem = mem
	if fe := feed(small, 64<<10); fe != nil || mem.used != 0 {
		t.Fatalf("a 64 KiB answer: %v, %d bytes counted; want none (the first part is free)", fe, mem.used)
	}
	a, b := newCollector(0), newCollector(0)
	a.mem, b.mem = mem, mem
	if fe := feed(a, 3<<20); fe != nil {
		t.Fatalf("a 3 MiB answer under a 12 MiB bound: %v", fe)
	}
	fe := feed(b, 3<<20)
	if fe == nil || fe.Class != failure.GatewayBusy || fe.Class.FailsOver() || fe.Class.CountsAgainstHealth() {
		t.Fatalf("a second 3 MiB answer (9 MiB counted each): %v; want gateway_busy, neutral", fe)
	}
	if p := fe.ToPublic(); p.Status != 503 || p.Code != "gateway_busy" || p.RetryAfter == 0 {
		t.Errorf("the caller is told %+v", p)
	}
	b.reset() // the next attempt starts from nothing
	a.release()
	a.release() // twice is harmless
	if mem.used != 0 {
		t.Fatalf("after release and reset, %d bytes still counted", mem.used)
	}
	c := newCollector(0)
	c.mem = mem
	if fe := feed(c, 3<<20); fe != nil {
		t.Errorf("after the memory came back: %v", fe)
	}
}
