package openairesponses

import (
	"net/http"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

// stateless is the advice every refused stateful field carries.
const stateless = "spillway does not store responses; send the whole conversation in 'input'"

// minOutputTokens is the Responses API's own floor for max_output_tokens.
const minOutputTokens = 16

// request holds what the top-level loop has read so far.
type request struct {
	fields.OpenAIRequest
	instructions string
	hasInput     bool
	inputSystem  string // system and developer input messages, joined
	toolChoiceAt loc    // where a named tool choice was given
}

// Decode validates an OpenAI Responses request body and returns it in
// canonical form. Anything malformed, stateful, or asking for something the
// gateway cannot honour is a 400 naming the field, so it never reaches a
// provider.
//
// Null is treated as absent for every optional field. store absent is taken
// as false (OpenAI's default is true, but spillway keeps nothing); store:true
// is refused. Parameters with no canonical counterpart that do not change
// the answer's shape are type-checked and ignored: metadata, user,
// safety_identifier, prompt_cache_key, prompt_cache_retention, service_tier,
// max_tool_calls (it bounds built-in tools, which are refused),
// truncation:"disabled", text.verbosity, stream_options, image detail and
// input_text cache breakpoints. reasoning (effort and summary settings) is
// also accepted and ignored: the canonical request carries no reasoning
// control, and refusing it would refuse most reasoning-model clients.
// reasoning input items are dropped (see decodeInput).
//
// The request's strings and raw schemas share one private copy of the body,
// so decoding costs one allocation for all unescaped text and the caller may
// reuse body at once.
func (*Dialect) Decode(body []byte, _ http.Header) (*canonical.Request, *failure.Public) {
	r := new(request)
	var s scanner
	return fields.Decode(&s, body, &words, r, func(key []byte) *failure.Public { return r.Member(&s, key) })
}

// Member reads one top-level member. Duplicate keys: the last one wins, as
// with encoding/json and Python's json.
func (r *request) Member(s *scanner, key []byte) *failure.Public {
	var p *failure.Public
	// Literal names keep loc from pinning a copy of the key.
	switch string(key) {
	case "model":
		p = r.ReadModel(s)
	case "input":
		r.hasInput = true
		r.inputSystem, r.Messages, p = decodeInput(s)
	case "instructions":
		l := words.Field("instructions")
		r.instructions, _, p = s.OptStr(l)
	case "max_output_tokens":
		l := words.Field("max_output_tokens")
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		if r.MaxTokens, p = s.Int(l); p == nil && r.MaxTokens < minOutputTokens {
			p = words.Bad(l, "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= %d, but got %d instead.", minOutputTokens, r.MaxTokens)
		}
	case "temperature":
		l := words.Field("temperature")
		r.Temperature, p = s.Range(l, 0, 2)
	case "top_p":
		l := words.Field("top_p")
		r.TopP, p = s.Range(l, 0, 1)
	case "stream":
		l := words.Field("stream")
		var b *bool
		if b, p = s.OptBool(l); b != nil {
			r.Stream = *b
		}
	case "stream_options":
		r.StreamOptions, p = decodeStreamOptions(s)
	case "tools":
		r.Tools, p = decodeTools(s)
	case "tool_choice":
		r.ToolChoice, r.toolChoiceAt, p = decodeToolChoice(s)
	case "parallel_tool_calls":
		l := words.Field("parallel_tool_calls")
		r.ParallelToolCalls, p = s.OptBool(l)
	case "text":
		r.ResponseFormat, p = decodeText(s)

	// Stateless: each of these asks the gateway to remember or fetch state.
	case "store":
		l := words.Field("store")
		var b *bool
		if b, p = s.OptBool(l); p == nil && b != nil && *b {
			p = words.Bad(l, "Invalid value for 'store': true. %s; send 'store': false or leave it out.", stateless)
		}
	case "previous_response_id":
		l := words.Field("previous_response_id")
		var given bool
		if _, given, p = s.OptStr(l); p == nil && given {
			p = words.Bad(l, "'previous_response_id' is not supported: %s.", stateless)
		}
	case "conversation":
		l := words.Field("conversation")
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		if c := s.Peek(); c != '"' && c != '{' {
			return s.TypeErr(l, "a string or an object")
		}
		if p = s.Skip(); p == nil {
			p = words.Bad(l, "'conversation' is not supported: %s.", stateless)
		}
	case "background":
		l := words.Field("background")
		var b *bool
		if b, p = s.OptBool(l); p == nil && b != nil && *b {
			p = words.Bad(l, "Invalid value for 'background': true. spillway does not store responses, so background mode is not available; send the request without it and read the answer (or its stream) directly.")
		}
	case "prompt":
		l := words.Field("prompt")
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		if p = s.Object(l); p == nil {
			p = words.Bad(l, "'prompt' is not supported: spillway does not store prompt templates; send the prompt in 'instructions' and 'input'.")
		}
	case "include":
		p = decodeInclude(s)

	// Accepted and ignored: no canonical counterpart, no effect on the answer's shape.
	case "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier":
		_, _, p = s.OptStr(words.Field(literal(key, "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier")))
	case "metadata":
		l := words.Field("metadata")
		p = s.OptObject(l)
	case "truncation":
		l := words.Field("truncation")
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		var v []byte
		if v, p = s.StrRaw(l); p == nil && string(v) != "disabled" {
			if string(v) == "auto" {
				p = words.Unsupported(l, "spillway never drops input items to fit the context window; send 'disabled' or leave it out")
			} else {
				p = words.Bad(l, "Invalid value for 'truncation': '%s'. Supported values are: 'auto' and 'disabled'.", v)
			}
		}
	case "max_tool_calls":
		l := words.Field("max_tool_calls")
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		var n int
		if n, p = s.Int(l); p == nil && n < 1 {
			p = words.Bad(l, "Invalid 'max_tool_calls': integer below minimum value. Expected a value >= 1, but got %d instead.", n)
		}
	case "reasoning":
		r.Reasoning, p = decodeReasoning(s)
	case "top_logprobs":
		l := words.Field("top_logprobs")
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		var n int
		if n, p = s.Int(l); p == nil && n != 0 {
			p = words.Unsupported(l, "token log probabilities are not available through every provider")
		}
	default:
		// OpenAI's own wording and param for an unknown argument.
		return failure.BadRequest(string(key), "Unrecognized request argument supplied: %s", key)
	}
	return p
}

// literal returns the one of names that key spells, so a field path holds a
// constant instead of a heap copy of the key.
func literal(key []byte, names ...string) string {
	for _, n := range names {
		if string(key) == n {
			return n
		}
	}
	return string(key)
}

// Check applies the rules that span several fields.
func (r *request) Check() *failure.Public {
	if p := r.CheckModel(&words); p != nil {
		return p
	}
	if !r.hasInput {
		return words.Missing(words.Field("input"))
	}
	if p := r.CheckStreamOptions(&words); p != nil {
		return p
	}
	r.System = joinSystem(r.instructions, r.inputSystem)
	r.IncludeUsage = r.Stream // a Responses stream always ends with usage
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	if len(r.Tools) == 0 {
		if tc.Mode == canonical.ToolChoiceNone || tc.Mode == canonical.ToolChoiceAuto {
			// Meaningless without tools and refused by some providers.
			r.ToolChoice = nil
			return nil
		}
		return words.Bad(words.Field("tool_choice"), "Invalid value for 'tool_choice': '%s' needs 'tools'; declare the functions the model may call.", tc.Mode)
	}
	if tc.Mode == canonical.ToolChoiceTool && !dialect.Declared(r.Tools, tc.Name) {
		return words.Bad(r.toolChoiceAt, "Invalid value for '%s': no function named '%s' is declared in 'tools'.", r.toolChoiceAt, tc.Name)
	}
	return nil
}

// joinSystem puts instructions first, then the system and developer input
// messages, separated by a blank line as canonical.Request.System says.
func joinSystem(instructions, inputSystem string) string {
	switch {
	case instructions == "":
		return inputSystem
	case inputSystem == "":
		return instructions
	}
	return instructions + "\n\n" + inputSystem
}

func decodeStreamOptions(s *scanner) (given bool, _ *failure.Public) {
	l := words.Field("stream_options")
	if isNull, p := s.Null(); isNull || p != nil {
		return false, p
	}
	p := s.Fields(l, func(key []byte) (p *failure.Public) {
		if string(key) == "include_obfuscation" {
			// The gateway never pads deltas, so either value is honoured.
			_, _, p = s.MaybeBool(l.F("include_obfuscation"))
		}
		return p
	})
	return p == nil, p
}

// decodeInclude accepts only an empty list: every includable asks for data
// (encrypted reasoning, logprobs, built-in tool results) spillway cannot
// get from every provider.
func decodeInclude(s *scanner) *failure.Public {
	l := words.Field("include")
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	if p := s.Array(l); p != nil {
		return p
	}
	ok, p := s.NextElem(true)
	if p != nil || !ok {
		return p
	}
	v, p := s.StrRaw(l.At(0))
	if p != nil {
		return p
	}
	return words.Bad(l.At(0), "'%s' is not supported by spillway: including '%s' asks for data not available through every provider; send an empty 'include' or leave it out.", l.At(0), v)
}

// decodeReasoning reads the reasoning settings: effort ("none" turns
// reasoning off) and summary, which asks to see the reasoning.
func decodeReasoning(s *scanner) (*canonical.Reasoning, *failure.Public) {
	l := words.Field("reasoning")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var r canonical.Reasoning
	if p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "effort":
			r.Effort, p = s.OptEnum(l.F("effort"), "none", "minimal", "low", "medium", "high", "xhigh", "max")
		case "summary", "generate_summary":
			var v string
			if v, p = s.OptEnum(l.F(string(key)), "auto", "concise", "detailed"); v != "" {
				r.Show = true
			}
		}
		return p
	}); p != nil {
		return nil, p
	}
	switch {
	case r.Effort == "none":
		r.Effort, r.Mode = "", canonical.ReasoningOff
	case r.Effort != "":
		r.Mode = canonical.ReasoningAdaptive
	case !r.Show:
		return nil, nil // nothing asked
	}
	return &r, nil
}
