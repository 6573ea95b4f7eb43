package redisstate

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/spillway-gw/spillway/internal/sticky"
)

// Pins layout, under the prefix: channel "pins", one message per pin
// recorded: "<key> <deployment> <expires, Unix ns>". Pins are not stored
// as keys: a replica that starts late learns the pins of the turns served
// after it started (a missed pin costs one turn a cold prompt cache, never
// a wrong answer).

type pinMirror struct{ c *Client }

var _ sticky.PinMirror = pinMirror{}

// SharePins makes every replica on this Redis adopt the pins p records.
// p must come from sticky.NewShared with the same seed on every replica
// (PinSeed gives one).
func (c *Client) SharePins(p *sticky.Store) {
	p.SetMirror(pinMirror{c})
	c.handle("pins", func(payload string) {
		replica, rest, ok := strings.Cut(payload, " ")
		if !ok || replica == c.o.Replica {
			return
		}
		f := strings.Fields(rest)
		if len(f) != 3 {
			return
		}
		k, err1 := strconv.ParseUint(f[0], 16, 64)
		exp, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return
		}
		p.Adopt(sticky.Key(k), f[1], exp)
	})
}

// PinSeed is the conversation-key seed every replica sharing this prefix
// derives alike.
func (c *Client) PinSeed() uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(c.o.Prefix); i++ {
		h = (h ^ uint64(c.o.Prefix[i])) * 1099511628211
	}
	return h
}

// PublishPin implements sticky.PinMirror.
func (m pinMirror) PublishPin(k sticky.Key, deployment string, expires int64) {
	c := m.c
	if !c.up.Load() {
		return
	}
	msg := c.o.Replica + " " + strconv.FormatUint(uint64(k), 16) + " " + deployment + " " + strconv.FormatInt(expires, 10)
	c.async("pins.publish", func(ctx context.Context, r redis.Cmdable) error {
		return r.Publish(ctx, c.key("pins"), msg).Err()
	})
}
