package gemini

import (
	"hash/fnv"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// usage is usageMetadata. Every count is omitempty on the wire, so a
// missing one is zero.
type usage struct {
	prompt, cached, candidates, thoughts, toolPrompt int
}

func readUsage(d *jsonread.Decoder) usage {
	var u usage
	d.Object(func(key []byte) {
		switch string(key) {
		case "promptTokenCount":
			u.prompt = d.Int()
		case "cachedContentTokenCount":
			u.cached = d.Int()
		case "candidatesTokenCount":
			u.candidates = d.Int()
		case "thoughtsTokenCount":
			u.thoughts = d.Int()
		case "toolUsePromptTokenCount":
			u.toolPrompt = d.Int()
		}
	})
	return u
}

// canonical maps usage. promptTokenCount already includes the cached
// tokens; tool-use prompt tokens (results of Google's built-in tools fed
// back to the model) are billed as input. Thinking is billed as output:
// OutputTokens = candidates + thoughts, ReasoningTokens = thoughts.
func (u usage) canonical() canonical.Usage {
	return canonical.Usage{
		InputTokens:       u.prompt + u.toolPrompt,
		CachedInputTokens: u.cached,
		OutputTokens:      u.candidates + u.thoughts,
		ReasoningTokens:   u.thoughts,
	}
}

// finish classifies a finishReason.
type finish uint8

const (
	finishNone      finish = iota // no finishReason: the answer goes on
	finishEnd                     // STOP (also a matched stop sequence), or a reason that ends a whole answer
	finishMaxTokens               // MAX_TOKENS, CONTINUATION
	finishFilter                  // a safety, policy or recitation filter stopped the output
	finishBadCall                 // the model produced an unusable function call
)

// finishOf maps finishReason. The filter reasons become
// StopContentFilter, not StopRefusal: Gemini's model never declines in a
// refusal field (a model that declines in words ends with STOP); these
// reasons mean a filter cut or withheld the output. OTHER and IMAGE_OTHER
// count as filters too: the provider stopped the output for a reason of
// its own, and the caller must not take the answer as complete.
// MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL and TOO_MANY_TOOL_CALLS
// leave no usable answer, so they are failures of the attempt (see
// badCall). FINISH_REASON_UNSPECIFIED, NO_IMAGE and reasons added later
// read as a natural end, as the other adapters read unknown reasons.
func finishOf(b []byte) finish {
	switch string(b) {
	case "":
		return finishNone
	case "MAX_TOKENS", "CONTINUATION":
		return finishMaxTokens
	case "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER":
		return finishFilter
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS":
		return finishBadCall
	}
	return finishEnd
}

// stop is the canonical stop reason of a finished answer; a STOP with
// function calls is a tool-use stop (Gemini has no reason of its own for
// it).
func (f finish) stop(calls bool) canonical.StopReason {
	switch f {
	case finishMaxTokens:
		return canonical.StopMaxTokens
	case finishFilter:
		return canonical.StopContentFilter
	}
	if calls {
		return canonical.StopToolUse
	}
	return canonical.StopEnd
}

// badCall is the verdict on an answer that ended in an unusable function
// call: the model failed, not the caller's request, so the chain may try
// another rung (before commit) and the caller never mistakes the empty or
// cut answer for a complete one.
func badCall(reason string) *failure.Error {
	return failure.Malformed("Gemini ended the answer with "+reason+" (no usable function call)", nil)
}

// part is one content part, as far as the gateway cares.
type part struct {
	text    string
	thought bool
	// sig is the part's thoughtSignature, which Gemini needs back with the
	// conversation to continue its reasoning.
	sig  string
	call bool
	id   string
	name string
	args string
}

// readPart reads a Part. Thought parts (thought: true) are reasoning
// summaries, which the stream carries as the answer's thinking block;
// executable code, inline data and other kinds are not asked for and are
// skipped.
func readPart(d *jsonread.Decoder, p *part) {
	*p = part{}
	d.Object(func(key []byte) {
		switch string(key) {
		case "text":
			p.text = d.Str()
		case "thought":
			p.thought = d.Bool()
		case "thoughtSignature":
			p.sig = d.Str()
		case "functionCall":
			p.call = true
			d.Object(func(key []byte) {
				switch string(key) {
				case "id":
					p.id = d.Str()
				case "name":
					p.name = d.Str()
				case "args":
					if d.IsNull() {
						return
					}
					if d.Peek() != '{' {
						d.Skip() // not an object: kept as {} below, never passed on raw
						return
					}
					if compact, ok := jsonwrite.AppendCompact(nil, d.Raw()); ok {
						p.args = string(compact)
					}
				}
			})
		}
	})
	if p.call && p.args == "" {
		p.args = "{}"
	}
}

// candidate is candidates[0].
type candidate struct {
	parts      []part
	finish     finish
	finishName string
}

// readCandidate reads one Candidate into c, reusing c.parts.
func readCandidate(d *jsonread.Decoder, c *candidate) {
	c.parts = c.parts[:0]
	c.finish, c.finishName = finishNone, ""
	d.Object(func(key []byte) {
		switch string(key) {
		case "content":
			d.Object(func(key []byte) {
				if string(key) != "parts" {
					return
				}
				d.Array(func() {
					c.parts = append(c.parts, part{})
					readPart(d, &c.parts[len(c.parts)-1])
				})
			})
		case "finishReason":
			b := d.Bytes()
			if c.finish = finishOf(b); c.finish == finishBadCall {
				c.finishName = string(b)
			}
		}
	})
}

// readFeedback reads promptFeedback's blockReason and blockReasonMessage.
func readFeedback(d *jsonread.Decoder) (reason, message string) {
	d.Object(func(key []byte) {
		switch string(key) {
		case "blockReason":
			reason = d.Str()
		case "blockReasonMessage":
			message = d.Str()
		}
	})
	return reason, message
}

// blockedText is the visible refusal for a blocked prompt: Gemini's own
// message when it sent one, else a neutral sentence naming the reason.
// A blocked prompt is the provider declining the request as the model's
// provider, so it maps to StopRefusal (Refused), unlike output filters.
func blockedText(reason, message string) string {
	if message != "" {
		return message
	}
	return "The request was blocked by the provider's content policy (" + reason + ")."
}

// callID is a tool call's id: Gemini's own when it sent one, else one
// derived from the response id and the call's ordinal, stable for the
// answer and unique across the turns of a conversation (some callers and
// providers reject a repeated tool-call id) without showing the provider's
// response id.
func callID(id, responseID string, ordinal int) string {
	if id != "" {
		return id
	}
	if responseID == "" {
		return "call_" + strconv.Itoa(ordinal)
	}
	h := fnv.New64a()
	h.Write([]byte(responseID))
	b := make([]byte, 0, 32)
	b = append(b, "call_"...)
	b = strconv.AppendUint(b, h.Sum64(), 36)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(ordinal), 10)
	return string(b)
}
