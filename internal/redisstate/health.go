package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway-gw/spillway/internal/health"
)

// Health layout, under the prefix:
//
//	health            channel: every transition, as a healthMsg
//	health:open:<id>  the open circuit in force, expiring when it may be probed
//	health:thr:<id>   the throttle window in force, expiring when it ends
//	probe:<id>        the half-open probe's lease: the holder's replica id
//
// The keys are for replicas that join (or reconnect) late: they read them
// and adopt what still holds.

// healthMsg is a health.Transition on the wire.
type healthMsg struct {
	Replica string `json:"r"`
	Dep     string `json:"d"`
	Kind    uint8  `json:"k"`
	Cause   string `json:"c,omitempty"`
	Detail  string `json:"x,omitempty"`
	Until   int64  `json:"u,omitempty"` // Unix milliseconds
	Since   int64  `json:"s,omitempty"`
}

func toMsg(replica string, tr health.Transition) healthMsg {
	m := healthMsg{Replica: replica, Dep: tr.Deployment, Kind: uint8(tr.Kind), Cause: string(tr.Cause), Detail: tr.Detail}
	if !tr.Until.IsZero() {
		m.Until = tr.Until.UnixMilli()
	}
	if !tr.Since.IsZero() {
		m.Since = tr.Since.UnixMilli()
	}
	return m
}

func (m healthMsg) transition() health.Transition {
	tr := health.Transition{Deployment: m.Dep, Kind: health.TransitionKind(m.Kind), Cause: health.State(m.Cause), Detail: m.Detail}
	if m.Until != 0 {
		tr.Until = time.UnixMilli(m.Until)
	}
	if m.Since != 0 {
		tr.Since = time.UnixMilli(m.Since)
	}
	return tr
}

// healthMirror implements health.Mirror for one tracker.
type healthMirror struct {
	c *Client
	t *health.Tracker
	// adopted is called after each remote transition is adopted (tests
	// measure propagation with it); nil: nothing.
	adopted func(health.Transition)
}

var _ health.Mirror = (*healthMirror)(nil)

// MirrorHealth shares t's transitions with every replica on this Redis and
// adopts theirs: t.SetMirror is called here. Call it before serving.
func (c *Client) MirrorHealth(t *health.Tracker) {
	c.mirrorHealth(t, nil)
}

func (c *Client) mirrorHealth(t *health.Tracker, adopted func(health.Transition)) *healthMirror {
	m := &healthMirror{c: c, t: t, adopted: adopted}
	t.SetMirror(m)
	c.onUpHook(m.resync)
	c.handle("health", m.receive)
	return m
}

func (m *healthMirror) receive(payload string) {
	var msg healthMsg
	if json.Unmarshal([]byte(payload), &msg) != nil || msg.Replica == m.c.o.Replica {
		return
	}
	tr := msg.transition()
	m.t.Adopt(tr)
	if m.adopted != nil {
		m.adopted(tr)
	}
}

// Publish implements health.Mirror: the transition's key (for late
// joiners), then the message, through the ordered queue.
func (m *healthMirror) Publish(tr health.Transition) {
	c := m.c
	b, err := json.Marshal(toMsg(c.o.Replica, tr))
	if err != nil {
		return
	}
	payload := string(b)
	c.async("health.publish", func(ctx context.Context, r redis.Cmdable) error {
		p := r.Pipeline()
		switch tr.Kind {
		case health.TransitionOpen:
			if ttl := time.Until(tr.Until); ttl > 0 {
				p.Set(ctx, c.key("health", "open", tr.Deployment), payload, ttl)
			}
		case health.TransitionThrottle:
			if ttl := time.Until(tr.Until); ttl > 0 {
				p.Set(ctx, c.key("health", "thr", tr.Deployment), payload, ttl)
			}
		case health.TransitionClose:
			p.Del(ctx, c.key("health", "open", tr.Deployment), c.key("health", "thr", tr.Deployment))
		}
		p.Publish(ctx, c.key("health"), payload)
		_, err := p.Exec(ctx)
		return err
	})
}

// AcquireProbe implements health.Mirror: SET NX PX, so exactly one replica
// holds a deployment's half-open probe; the others hear of it and skip the
// deployment until it ends. Redis down or slow: true (probe locally).
func (m *healthMirror) AcquireProbe(id string) bool {
	c := m.c
	var ok bool
	err := c.call(context.Background(), "health.probe", func(ctx context.Context) error {
		var err error
		ok, err = c.rdb.SetNX(ctx, c.key("probe", id), c.o.Replica, c.o.ProbeLease).Result()
		return err
	})
	if err != nil {
		return true
	}
	if ok {
		m.Publish(health.Transition{Deployment: id, Kind: health.TransitionProbe, Until: time.Now().Add(c.o.ProbeLease)})
	}
	return ok
}

// releaseScript deletes the lease only if this replica still holds it.
var releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// ReleaseProbe implements health.Mirror: after the probe's outcome (queued
// first, so replicas hear the outcome before the end), the lease is freed.
func (m *healthMirror) ReleaseProbe(id string) {
	c := m.c
	b, _ := json.Marshal(toMsg(c.o.Replica, health.Transition{Deployment: id, Kind: health.TransitionProbeEnd}))
	payload := string(b)
	c.durable("health.release", 0, func(ctx context.Context, r redis.Cmdable) error {
		if err := releaseScript.Run(ctx, r, []string{c.key("probe", id)}, c.o.Replica).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		return r.Publish(ctx, c.key("health"), payload).Err()
	})
}

// maxHealthKeys bounds what one resync reads.
const maxHealthKeys = 100000

// resync adopts what the other replicas published while this one was away,
// then republishes what this one holds, so that all converge.
func (m *healthMirror) resync(ctx context.Context) {
	c := m.c
	var keys []string
	err := c.call(ctx, "health.resync", func(cctx context.Context) error {
		it := c.rdb.Scan(cctx, 0, c.key("health", "*"), 1000).Iterator()
		for it.Next(cctx) && len(keys) < maxHealthKeys {
			keys = append(keys, it.Val())
		}
		return it.Err()
	})
	if err != nil {
		return
	}
	for i := 0; i < len(keys); i += 500 {
		batch := keys[i:min(i+500, len(keys))]
		var vals []any
		if c.call(ctx, "health.resync", func(cctx context.Context) error {
			var err error
			vals, err = c.rdb.MGet(cctx, batch...).Result()
			return err
		}) != nil {
			return
		}
		for _, v := range vals {
			if s, ok := v.(string); ok {
				m.receive(s)
			}
		}
	}
	for _, tr := range m.t.Transitions() {
		m.Publish(tr)
	}
}
