package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// conversation is one caller's multi-turn conversation through openai-go,
// the SDK pattern: each answer appended to the messages, then the next
// question, the whole history sent again.
type conversation struct {
	h      *harness
	stream bool
	params openai.ChatCompletionNewParams
	opts   []option.RequestOption
	turns  int
}

func newConversation(h *harness, stream bool, system string, opts ...option.RequestOption) *conversation {
	return &conversation{h: h, stream: stream, opts: opts, params: openai.ChatCompletionNewParams{
		Model: publicModel, MaxCompletionTokens: openai.Int(32),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system)},
	}}
}

// turn asks the next question and appends the answer; it returns the
// deployment that served and the trail of rungs tried.
func (cv *conversation) turn(t *testing.T) (deployment, trail string) {
	t.Helper()
	cv.turns++
	cv.params.Messages = append(cv.params.Messages, openai.UserMessage(fmt.Sprintf("Question %d?", cv.turns)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var resp *http.Response
	c := cv.h.client(append(cv.opts, option.WithResponseInto(&resp))...)
	if !cv.stream {
		cc, err := c.Chat.Completions.New(ctx, cv.params)
		if err != nil || len(cc.Choices) == 0 {
			t.Fatalf("turn %d: %v", cv.turns, err)
		}
		cv.params.Messages = append(cv.params.Messages, cc.Choices[0].Message.ToParam())
	} else {
		s := c.Chat.Completions.NewStreaming(ctx, cv.params)
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil || len(acc.Choices) == 0 {
			t.Fatalf("turn %d (stream): %v", cv.turns, err)
		}
		cv.params.Messages = append(cv.params.Messages, acc.Choices[0].Message.ToParam())
	}
	return hdr(resp, "X-Spillway-Deployment"), hdr(resp, "X-Spillway-Trail")
}

// stickyStep is what happens before one or more turns, and where they
// must be served.
type stickyStep struct {
	turns  int               // how many turns (default 1)
	faults map[string]string // mock scripts set first ("" heals)
	want   string            // the deployment every turn must be served by
	trail  string            // the first turn's trail, when set
}

// TestStickyConversation is issue 13's done-when: a 10-turn conversation
// stays on one rung while it is healthy, moves when that rung dies, then
// stays on the new rung, through openai-go, plain and streamed. In the
// first variant the pinned rung is not the pool's first: the conversation
// started while the primary was down, and stays off the primary after it
// recovered.
func TestStickyConversation(t *testing.T) {
	down, up := "status=503", ""
	tests := []struct {
		name   string
		edit   func(*catalog.Config)
		header string
		steps  []stickyStep
	}{
		{name: "started while the primary was down", steps: []stickyStep{
			{faults: map[string]string{"primary": down}, want: "secondary", trail: "primary=provider_unavailable, secondary=ok"},
			{turns: 4, faults: map[string]string{"primary": up}, want: "secondary", trail: "secondary=ok"},
			// The pinned rung dies: the rest keep their order behind it.
			{faults: map[string]string{"secondary": down}, want: "primary", trail: "secondary=provider_unavailable, primary=ok"},
			{turns: 4, faults: map[string]string{"secondary": up}, want: "primary", trail: "primary=ok"},
		}},
		{name: "started on the primary", steps: []stickyStep{
			{turns: 4, want: "primary", trail: "primary=ok"},
			{faults: map[string]string{"primary": down}, want: "secondary", trail: "primary=provider_unavailable, secondary=ok"},
			{turns: 5, faults: map[string]string{"primary": up}, want: "secondary", trail: "secondary=ok"},
		}},
		{name: "known by the conversation header", header: "conv-42", steps: []stickyStep{
			{faults: map[string]string{"primary": down, "secondary": down}, want: "tertiary"},
			{turns: 9, faults: map[string]string{"primary": up, "secondary": up}, want: "tertiary", trail: "tertiary=ok"},
		}},
		{name: "stickiness off: back to the pool's order", edit: func(c *catalog.Config) {
			off := false
			c.Routes[0].Sticky.Enabled = &off
		}, steps: []stickyStep{
			{faults: map[string]string{"primary": down}, want: "secondary"},
			{turns: 9, faults: map[string]string{"primary": up}, want: "primary", trail: "primary=ok"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				h := newHarnessWith(t, tt.edit, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"}, rungSpec{"tertiary", "gemini"})
				var opts []option.RequestOption
				if tt.header != "" {
					opts = append(opts, option.WithHeader("X-Spillway-Conversation", tt.header))
				}
				cv := newConversation(h, stream, "You are terse.", opts...)
				for _, st := range tt.steps {
					for id, script := range st.faults {
						h.fault(id, script)
					}
					for i := range max(st.turns, 1) {
						got, trail := cv.turn(t)
						if got != st.want {
							t.Fatalf("turn %d served by %q (trail %q), want %q", cv.turns, got, trail, st.want)
						}
						if i == 0 && st.trail != "" && trail != st.trail {
							t.Errorf("turn %d: trail %q, want %q", cv.turns, trail, st.trail)
						}
					}
				}
				if cv.turns != 10 {
					t.Fatalf("%d turns, want 10", cv.turns)
				}
			})
		})
	}
}

// TestStickyPerConversation: a pin holds one conversation; another one,
// and a single-turn request sharing the conversation's prompt (a batch),
// start in the pool's order.
func TestStickyPerConversation(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "status=503")
	cv := newConversation(h, false, "You are terse.")
	if got, _ := cv.turn(t); got != "secondary" {
		t.Fatalf("first turn served by %q", got)
	}
	h.fault("primary", "")
	other := newConversation(h, false, "You are verbose.")
	if got, _ := other.turn(t); got != "primary" {
		t.Errorf("another conversation started on %q, want the primary", got)
	}
	if got, _ := other.turn(t); got != "primary" {
		t.Errorf("another conversation's second turn on %q, want the primary", got)
	}
	if got, _ := cv.turn(t); got != "secondary" {
		t.Errorf("the first conversation moved to %q", got)
	}
	// A single-turn request with the very prompt of the conversation's
	// first turn is not held on its rung.
	batch := newConversation(h, false, "You are terse.")
	if got, _ := batch.turn(t); got != "primary" {
		t.Errorf("a first turn sharing a pinned prompt went to %q, want the primary", got)
	}
}

// A conversation id longer than the bound is refused, naming the header,
// rather than silently not followed.
func TestStickyHeaderBound(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	body := `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := h.post("/v1/chat/completions", body, "X-Spillway-Conversation", strings.Repeat("c", 257))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || h.counts()["primary"] != 0 {
		t.Errorf("a 257-byte conversation id: %s, primary called %d times", resp.Status, h.counts()["primary"])
	}
	resp, err = h.post("/v1/chat/completions", body, "X-Spillway-Conversation", strings.Repeat("c", 256))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a 256-byte conversation id: %s", resp.Status)
	}
}
