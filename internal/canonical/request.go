// Package canonical defines the provider-neutral request, response and event
// stream that every caller dialect and every provider adapter maps through.
//
// Dialects decode a caller's body into a Request and encode Events back into
// the caller's wire format; provider adapters encode a Request into a
// provider's wire format and decode its answer into Events. Nothing in this
// package does I/O.
package canonical

import "encoding/json"

// Role is the author of a message in the conversation. The system prompt is
// not a message: it lives in Request.System.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries a tool result; Message.ToolCallID names the call.
	RoleTool Role = "tool"
)

// PartType says which fields of a Part are meaningful.
type PartType uint8

const (
	PartText PartType = iota
	// PartImage is an image given by URL (ImageURL) or inline (MediaType+Data).
	PartImage
	// PartThinking is the model's reasoning in an assistant turn: Text (may
	// be empty when the provider omitted it) and the Signature that lets
	// the provider Family that issued it verify it.
	PartThinking
	// PartRedactedThinking is encrypted reasoning in an assistant turn:
	// Data, readable only by the provider Family that issued it.
	PartRedactedThinking
)

// Family is a set of providers that can read each other's reasoning
// signatures: Claude's on Anthropic's API and on Bedrock share theirs
// (Anthropic documents signatures as portable across its platforms);
// Gemini's thought signatures are Gemini's alone.
type Family string

const (
	FamilyClaude Family = "claude"
	FamilyGemini Family = "gemini"
)

// Part is one piece of message content.
type Part struct {
	Type PartType
	Text string
	// ImageURL is an http(s) URL; empty when the image is inline.
	ImageURL string
	// MediaType is the inline image's MIME type, e.g. "image/png".
	MediaType string
	// Data is the inline image, base64-encoded (standard alphabet), or a
	// redacted thinking block's opaque data.
	Data string
	// Signature and Family: a thinking part's signature and who issued it.
	Signature string
	Family    Family
}

// TextPart is shorthand for a text Part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// Message is one turn of the conversation.
type Message struct {
	Role    Role
	Content []Part
	// ToolCalls are the calls an assistant turn made, in order.
	ToolCalls []ToolCall
	// ToolCallID is set on RoleTool messages: the call this result answers.
	ToolCallID string
	// ToolName is the name of the answered tool when the dialect knows it
	// (some providers, e.g. Gemini, need it). Empty when unknown.
	ToolName string
	// IsError marks a tool result that reports a failure.
	IsError bool
}

// Text joins the message's text parts.
func (m *Message) Text() string {
	if len(m.Content) == 1 && m.Content[0].Type == PartText {
		return m.Content[0].Text
	}
	var n int
	for _, p := range m.Content {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range m.Content {
		if p.Type == PartText {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text of the arguments object ("{}" when empty).
	Arguments string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments; nil means none.
	Parameters json.RawMessage
	Strict     bool
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required" // any tool
	ToolChoiceTool     ToolChoiceMode = "tool"     // the tool named in Name
)

// ToolChoice constrains tool use.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// FormatType is the kind of structured output asked for.
type FormatType string

const (
	FormatText       FormatType = "text"
	FormatJSONObject FormatType = "json_object"
	FormatJSONSchema FormatType = "json_schema"
)

// ReasoningMode says how much the model should think before answering.
type ReasoningMode uint8

const (
	// ReasoningDefault: the caller said nothing; the provider's default.
	ReasoningDefault ReasoningMode = iota
	// ReasoningOff: no reasoning (Anthropic thinking disabled).
	ReasoningOff
	// ReasoningBudget: think within BudgetTokens (Anthropic's enabled
	// thinking, Gemini's thinkingBudget).
	ReasoningBudget
	// ReasoningAdaptive: the model decides, guided by Effort when set
	// (Anthropic's adaptive thinking, OpenAI's reasoning effort).
	ReasoningAdaptive
)

// Reasoning asks for thinking.
type Reasoning struct {
	Mode         ReasoningMode
	BudgetTokens int
	// Effort is "minimal", "low", "medium", "high", "xhigh" or "max"; empty
	// when the caller named none.
	Effort string
	// Show asks for the reasoning's text (Anthropic display "summarized",
	// a Responses reasoning summary); Hide for none (display "omitted").
	// Neither: the provider's default.
	Show, Hide bool
}

// EmbedInput is what an embeddings request embeds: Texts, or Tokens
// (token ids in the model's own tokenizer, which only a rung of that
// tokenizer's provider can take), never both.
type EmbedInput struct {
	Texts  []string
	Tokens [][]int
	// Dimensions asks for vectors of that length; 0: the model's default.
	Dimensions int
	// Base64 asks for the vectors as base64 little-endian float32, as
	// OpenAI's encoding_format "base64".
	Base64 bool
}

// Len is the number of inputs.
func (e *EmbedInput) Len() int { return len(e.Texts) + len(e.Tokens) }

// ResponseFormat asks for structured output.
type ResponseFormat struct {
	Type   FormatType
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Request is a generation request in canonical form.
type Request struct {
	// Model is the public model name the caller asked for.
	Model string
	// System is the system prompt; empty when none. Several system messages
	// are joined with a blank line.
	System   string
	Messages []Message
	Tools    []Tool
	// ToolChoice is nil when the caller did not say (provider default).
	ToolChoice *ToolChoice
	// ParallelToolCalls is nil when the caller did not say.
	ParallelToolCalls *bool
	// MaxTokens is the output ceiling; 0 means the caller set none.
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	// TopK is nil when the caller did not set it; OpenAI has no counterpart.
	TopK *int
	Stop []string
	// ResponseFormat is nil for plain text.
	ResponseFormat *ResponseFormat
	// Reasoning is nil when the caller asked nothing about thinking.
	Reasoning *Reasoning
	// Embed is set on an embeddings request, which has no messages: the
	// texts (or token ids) to embed.
	Embed *EmbedInput
	// Stream is true when the caller asked for a streamed answer.
	Stream bool
	// IncludeUsage asks for usage in the stream even where the caller's
	// dialect makes it optional (OpenAI Chat's stream_options.include_usage).
	IncludeUsage bool

	// AnthropicVersion is the anthropic-version an Anthropic caller spoke
	// (empty for other dialects); Anthropic rungs are sent it where they
	// can honour the request under it.
	AnthropicVersion string
	// Betas are the caller's anthropic-beta values that may change the
	// answer, in order; hints that never do are not kept (see
	// package anthropicbeta).
	Betas []string
}

// HasImages reports whether any message carries an image part.
func (r *Request) HasImages() bool {
	for i := range r.Messages {
		for _, p := range r.Messages[i].Content {
			if p.Type == PartImage {
				return true
			}
		}
	}
	return false
}

// InputBytes is the size of the prompt's text, a cheap basis for token
// estimates before a provider reports usage.
func (r *Request) InputBytes() int {
	n := len(r.System)
	for i := range r.Messages {
		m := &r.Messages[i]
		for _, p := range m.Content {
			n += len(p.Text) + len(p.Data)/4
		}
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range r.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if e := r.Embed; e != nil {
		for _, t := range e.Texts {
			n += len(t)
		}
		for _, t := range e.Tokens {
			n += 4 * len(t) // a token is about four bytes of text
		}
	}
	return n
}
