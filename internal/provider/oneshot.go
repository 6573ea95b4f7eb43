package provider

import (
	"io"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// Answered is a canonical.Stream over an answer that arrived whole (an
// embeddings response): its events, then io.EOF.
type Answered struct {
	Events []canonical.Event
}

var _ canonical.Stream = (*Answered)(nil)

// Next returns the next event, io.EOF after the last.
func (a *Answered) Next() (canonical.Event, error) {
	if len(a.Events) == 0 {
		return canonical.Event{}, io.EOF
	}
	ev := a.Events[0]
	a.Events = a.Events[1:]
	return ev, nil
}

// Close releases nothing: the body was read whole.
func (a *Answered) Close() error { return nil }

// Embedded builds the stream of an embeddings answer: one event per
// vector, then the usage when the provider reported it (inputTokens >= 0).
func Embedded(vectors [][]float32, inputTokens int) *Answered {
	evs := make([]canonical.Event, 0, len(vectors)+2)
	for i, v := range vectors {
		evs = append(evs, canonical.Event{Kind: canonical.EventEmbedding, Index: i, Vector: v})
	}
	if inputTokens >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: inputTokens}})
	}
	evs = append(evs, canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopEnd})
	return &Answered{Events: evs}
}

// MaxEmbeddingTokens bounds a provider's reported embedding usage: no
// request of 2048 inputs of a context window each comes near it.
const MaxEmbeddingTokens = 1 << 30
