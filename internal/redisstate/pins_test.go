package redisstate

import (
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// A pin recorded on A is followed on B: both derive the same key for the
// conversation, and B adopts A's pin.
func TestPinsShared(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	a, b := open(t, url, prefix, nil), open(t, url, prefix, nil)
	pa, pb := sticky.NewShared(100, nil, a.PinSeed()), sticky.NewShared(100, nil, b.PinSeed())
	a.SharePins(pa)
	b.SharePins(pb)
	waitSubscribedTo(t, "pins", a, b)
	req := &canonical.Request{System: "be brief", Messages: []canonical.Message{{Role: canonical.RoleUser,
		Content: []canonical.Part{{Type: canonical.PartText, Text: "hello"}}}}}
	ka, ok := pa.Key("m", "", req)
	kb, _ := pb.Key("m", "", req)
	if !ok || ka != kb {
		t.Fatalf("replicas derive different keys for one conversation: %x %x", ka, kb)
	}
	if hk, _ := pa.Key("m", "conv-1", req); hk == ka {
		t.Fatal("a conversation header did not change the key")
	}
	pa.Record(ka, "dep-2", time.Minute)
	waitFor(t, time.Second, "B follows A's pin", func() bool { d, ok := pb.Pinned(kb); return ok && d == "dep-2" })
	// An expired pin from elsewhere is not adopted.
	pb.Adopt(sticky.Key(7), "dep-1", time.Now().Add(-time.Second).UnixNano())
	if _, ok := pb.Pinned(7); ok {
		t.Error("an expired pin was adopted")
	}
}
