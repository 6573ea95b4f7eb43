package engine

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// DefaultMaxAnswerBytes bounds a non-streamed answer assembled in memory:
// far above any model's output ceiling (about 4 bytes a token), far below
// what a hostile provider could make the gateway hold.
const DefaultMaxAnswerBytes = 16 << 20

// DefaultAnswerMemory bounds the memory all non-streamed answers being
// assembled and written hold together: five answers at the size bound.
const DefaultAnswerMemory = 256 << 20

// Answer memory is counted at three times an answer's bytes (what a
// 15 MiB answer was measured to cost in heap: the assembled answer, the
// builder's growth, its encoding for the caller), beyond a first part that
// is free so that ordinary answers never touch the shared count, and taken
// in steps so that a growing answer takes the lock rarely.
const (
	answerFactor = 3
	answerFree   = 384 << 10 // 128 KiB of answer
	answerStep   = 1 << 20
)

// answerMemory is the gateway-wide count of answer memory. A request
// whose answer would push it past its bound fails as gateway_busy: the
// gateway's state, not the provider's fault, so no failover and no mark
// against the provider's health.
type answerMemory struct {
	mu        sync.Mutex
	used, max int64
}

func newAnswerMemory(max int64) *answerMemory {
	if max <= 0 {
		max = DefaultAnswerMemory
	}
	return &answerMemory{max: max}
}

func (m *answerMemory) take(n int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.max {
		return false
	}
	m.used += n
	return true
}

func (m *answerMemory) give(n int64) {
	m.mu.Lock()
	m.used -= n
	m.mu.Unlock()
}

// errAnswerMemory: the gateway holds as much answer memory as it may.
var errAnswerMemory = errors.New("the gateway's memory for whole answers is in use; the answer was abandoned")

// maxEmbeddings bounds the index of an embedding a provider may return;
// requests carry far fewer inputs (the dialect caps them).
const maxEmbeddings = 1 << 16

// errAnswerTooLarge is the provider's fault: no model writes that much.
var errAnswerTooLarge = errors.New("the provider's answer exceeded the gateway's answer size bound")

// collector assembles one attempt's semantic events into a whole answer,
// for a caller that asked for no stream. Nothing reaches the caller until
// the provider's stream ended cleanly, so a failure anywhere before that
// point fails over invisibly.
type collector struct {
	limit   int
	size    int
	text    strings.Builder
	refusal strings.Builder
	calls   []call
	// thinking holds the reasoning blocks; thinkAt maps a thinking block's
	// stream index to its place there.
	thinking []canonical.Part
	thinkBuf [][]byte
	thinkAt  map[int]int
	// vectors are the embeddings, by input index.
	vectors [][]float32
	// byIndex maps a tool call's stream index to its place in calls.
	byIndex map[int]int
	// mem is the shared answer memory (nil: unbounded) and held what this
	// answer has taken of it.
	mem  *answerMemory
	held int64
}

type call struct {
	id, name string
	args     []byte
}

func newCollector(limit int) *collector {
	if limit <= 0 {
		limit = DefaultMaxAnswerBytes
	}
	return &collector{limit: limit}
}

// release gives back the answer memory held; the answer's owner calls it
// once the answer is written (or abandoned). Safe to call more than once.
func (c *collector) release() {
	if c.mem != nil && c.held > 0 {
		c.mem.give(c.held)
	}
	c.held = 0
}

// reset forgets a failed attempt's partial answer.
func (c *collector) reset() {
	c.release()
	c.size = 0
	c.text.Reset()
	c.refusal.Reset()
	c.calls = c.calls[:0]
	clear(c.byIndex)
	c.thinking, c.thinkBuf, c.vectors = nil, nil, nil
	clear(c.thinkAt)
}

// think returns the thinking block at stream index i, opening it.
func (c *collector) think(i int) int {
	if k, ok := c.thinkAt[i]; ok {
		return k
	}
	if c.thinkAt == nil {
		c.thinkAt = map[int]int{}
	}
	c.thinkAt[i] = len(c.thinking)
	c.thinking = append(c.thinking, canonical.Part{Type: canonical.PartThinking})
	c.thinkBuf = append(c.thinkBuf, nil)
	return len(c.thinking) - 1
}

// add takes one semantic event. It fails when the answer outgrows the
// bound: the provider is then treated as broken.
func (c *collector) add(ev *canonical.Event) *failure.Error {
	c.size += len(ev.Text) + len(ev.ID) + len(ev.Name) + 4*len(ev.Vector)
	if c.size > c.limit {
		return &failure.Error{Class: failure.ProviderUnavailable, Detail: errAnswerTooLarge.Error(), Err: errAnswerTooLarge}
	}
	if acct := int64(answerFactor*c.size) - answerFree; c.mem != nil && acct > c.held {
		n := (acct - c.held + answerStep - 1) / answerStep * answerStep
		if !c.mem.take(n) {
			return &failure.Error{Class: failure.GatewayBusy, Detail: errAnswerMemory.Error(), Err: errAnswerMemory}
		}
		c.held += n
	}
	switch ev.Kind {
	case canonical.EventTextDelta:
		c.text.WriteString(ev.Text)
	case canonical.EventRefusalDelta:
		c.refusal.WriteString(ev.Text)
	case canonical.EventToolCallStart:
		if c.byIndex == nil {
			c.byIndex = map[int]int{}
		}
		c.byIndex[ev.Index] = len(c.calls)
		c.calls = append(c.calls, call{id: ev.ID, name: ev.Name, args: []byte(ev.Text)})
	case canonical.EventToolCallDelta:
		if i, ok := c.byIndex[ev.Index]; ok {
			c.calls[i].args = append(c.calls[i].args, ev.Text...)
		}
	case canonical.EventThinkingDelta:
		k := c.think(ev.Index)
		c.thinkBuf[k] = append(c.thinkBuf[k], ev.Text...)
	case canonical.EventThinkingSignature:
		k := c.think(ev.Index)
		c.thinking[k].Signature, c.thinking[k].Family = ev.Text, ev.Family
	case canonical.EventEmbedding:
		if ev.Index < 0 || ev.Index > maxEmbeddings {
			return &failure.Error{Class: failure.ProviderUnavailable, Detail: "an embedding for an input that was never sent"}
		}
		for len(c.vectors) <= ev.Index {
			c.vectors = append(c.vectors, nil)
		}
		c.vectors[ev.Index] = ev.Vector
	case canonical.EventRedactedThinking:
		k := c.think(ev.Index)
		c.thinking[k] = canonical.Part{Type: canonical.PartRedactedThinking, Data: ev.Text, Family: ev.Family}
	}
	return nil
}

// response is the assembled answer.
func (c *collector) response(stop canonical.StopReason, stopSeq string, u canonical.Usage) *canonical.Response {
	r := &canonical.Response{Text: c.text.String(), Refusal: c.refusal.String(), Stop: stop, StopSequence: stopSeq, Usage: u}
	for k := range c.thinking {
		if c.thinking[k].Type == canonical.PartThinking {
			c.thinking[k].Text = string(c.thinkBuf[k])
		}
	}
	r.Thinking = c.thinking
	r.Embeddings = c.vectors
	if len(c.calls) > 0 {
		r.ToolCalls = make([]canonical.ToolCall, len(c.calls))
		for i := range c.calls {
			r.ToolCalls[i] = canonical.ToolCall{ID: c.calls[i].id, Name: c.calls[i].name, Arguments: string(c.calls[i].args)}
		}
	}
	return r
}

// check fails an answer that does not answer the request: an embeddings
// answer must hold one vector per input.
func (c *collector) check(req *canonical.Request) *failure.Error {
	if req.Embed == nil {
		return nil
	}
	n := req.Embed.Len()
	bad := len(c.vectors) != n
	for _, v := range c.vectors {
		bad = bad || len(v) == 0
	}
	if bad {
		return &failure.Error{Class: failure.ProviderUnavailable, Detail: "the provider returned " + strconv.Itoa(len(c.vectors)) + " embeddings for " + strconv.Itoa(n) + " inputs"}
	}
	return nil
}
