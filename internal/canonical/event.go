package canonical

// EventKind names what an Event carries.
type EventKind uint8

const (
	// EventStart: the provider began its answer. Protocol only: it carries the
	// provider's own response id and model, which never reach the caller.
	EventStart EventKind = iota + 1
	// EventTextDelta: Text is a fragment of the answer's text.
	EventTextDelta
	// EventToolCallStart: a tool call begins. Index is its ordinal within the
	// answer (0, 1, ...), ID and Name identify it.
	EventToolCallStart
	// EventToolCallDelta: Text is a fragment of the JSON arguments of the tool
	// call at Index.
	EventToolCallDelta
	// EventRefusalDelta: Text is a fragment of a visible refusal.
	EventRefusalDelta
	// EventThinkingDelta: Text is a fragment of the model's visible
	// reasoning (a thinking block, a thought summary). Index is the
	// thinking block's ordinal within the answer.
	EventThinkingDelta
	// EventThinkingSignature: Text is the signature that closes the
	// thinking block at Index (it may come with no text, when the provider
	// omits the reasoning), and Family the provider family that issued it
	// and alone can read it back (FamilyClaude, FamilyGemini).
	EventThinkingSignature
	// EventRedactedThinking: Text is one redacted (encrypted) reasoning
	// block, whole; Family as for a signature.
	EventRedactedThinking
	// EventEmbedding: Vector is the embedding of the input at Index.
	EventEmbedding
	// EventUsage: Usage holds the cumulative counts so far; the last wins.
	EventUsage
	// EventStop: the answer ended with Stop (and StopSequence). The provider's
	// terminal event may still follow; Stream.Next returns io.EOF after it.
	EventStop
)

var kindNames = [...]string{"", "start", "text_delta", "tool_call_start", "tool_call_delta", "refusal_delta",
	"thinking_delta", "thinking_signature", "redacted_thinking", "embedding", "usage", "stop"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Semantic reports whether the event is content the caller can see. The
// first semantic event commits a stream to its rung.
func (k EventKind) Semantic() bool {
	return k >= EventTextDelta && k <= EventEmbedding
}

// Thinking reports whether the event belongs to a reasoning block.
func (k EventKind) Thinking() bool {
	return k >= EventThinkingDelta && k <= EventRedactedThinking
}

// Event is one step of a provider's answer. It is a value: adapters may
// reuse nothing that an Event points to after the next call to Next.
type Event struct {
	Kind  EventKind
	Index int
	// Text is the delta for text, refusal and tool-argument events.
	Text string
	// ID and Name: the tool call's id and function name (EventToolCallStart);
	// the provider's response id and model (EventStart).
	ID   string
	Name string
	// Family is set on EventThinkingSignature and EventRedactedThinking.
	Family Family
	// Vector is set on EventEmbedding.
	Vector []float32
	// Usage is set on EventUsage.
	Usage Usage
	// Stop and StopSequence are set on EventStop.
	Stop         StopReason
	StopSequence string
}

// Stream is a provider's answer being read. Next returns events in order; it
// returns io.EOF once the provider's terminal event has been read, and a
// *failure.Error when the stream broke (including ending without its
// terminal event). Close releases the connection; it is safe to call twice.
type Stream interface {
	Next() (Event, error)
	Close() error
}

// Pender is implemented by streams that can tell, without blocking, whether
// another event is already available. The engine flushes the caller's
// stream only when none is: a burst goes out in one write, and a lone event
// is never held back.
type Pender interface {
	Pending() bool
}

// StopReason is why the model stopped.
type StopReason string

const (
	StopEnd           StopReason = "end"            // natural end of turn
	StopMaxTokens     StopReason = "max_tokens"     // hit the output ceiling
	StopSequence      StopReason = "stop_sequence"  // matched a stop sequence
	StopToolUse       StopReason = "tool_use"       // wants tool results
	StopRefusal       StopReason = "refusal"        // declined
	StopContentFilter StopReason = "content_filter" // a filter removed output
	StopContextWindow StopReason = "context_window" // prompt+output hit the context window
	StopPause         StopReason = "pause"          // provider paused a long turn
)

// Usage is token accounting for one answer.
type Usage struct {
	// InputTokens counts every prompt token, cached ones included.
	InputTokens int
	// CachedInputTokens is the part of InputTokens read from a prompt cache.
	CachedInputTokens int
	// CacheWriteTokens is the part of InputTokens written to a prompt cache.
	CacheWriteTokens int
	// OutputTokens counts every generated token, reasoning included.
	OutputTokens int
	// ReasoningTokens is the part of OutputTokens spent on hidden reasoning.
	ReasoningTokens int
}

// IsZero reports whether no count was set.
func (u Usage) IsZero() bool { return u == Usage{} }

// Response is a whole, non-streamed answer.
type Response struct {
	// Thinking holds the answer's reasoning blocks, in order, as parts
	// (PartThinking, PartRedactedThinking); they precede the text.
	Thinking []Part
	// ID and Model are the provider's; they never reach the caller.
	ID    string
	Model string
	// Text is the answer's text; Refusal the visible refusal, if any.
	Text      string
	Refusal   string
	ToolCalls []ToolCall
	Stop      StopReason
	// StopSequence is the matched stop sequence when Stop is StopSequence.
	StopSequence string
	Usage        Usage
	// Embeddings are an embeddings request's vectors, one per input.
	Embeddings [][]float32
}

// Empty reports whether the answer has no content at all.
func (r *Response) Empty() bool {
	return r.Text == "" && r.Refusal == "" && len(r.ToolCalls) == 0 && len(r.Embeddings) == 0
}
