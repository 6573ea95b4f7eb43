package openaichat

import (
	"net/http"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Decode validates an OpenAI Chat Completions request body and returns it in
// canonical form. Anything malformed, or asking for something the gateway
// cannot honour, is a 400 naming the field, so it never reaches a provider.
//
// Null is treated as absent for every optional field. Parameters that only
// tune sampling or bookkeeping and have no canonical counterpart (user,
// safety_identifier, metadata, store, service_tier, seed, prompt_cache_key,
// prompt_cache_retention, verbosity, presence_penalty,
// frequency_penalty, stream_options.include_obfuscation, image detail and
// message names) are type-checked and ignored.
//
// The request's strings and raw schemas share one private copy of the body,
// so decoding costs one allocation for all unescaped text and the caller may
// reuse body at once.
func (*Dialect) Decode(body []byte, _ http.Header) (*canonical.Request, *failure.Public) {
	r := new(request)
	var s scanner
	return fields.Decode(&s, body, &words, r, func(key []byte) *failure.Public { return r.Member(&s, key) })
}

// request holds what the top-level loop has read so far.
type request struct {
	fields.OpenAIRequest
	hasMessages   bool
	maxTokens     int // the deprecated max_tokens, 0 when absent
	maxCompletion int
	toolChoiceAt  loc // where the tool_choice's function name was given
}

// Member reads one top-level member. Duplicate keys: the last one wins, as
// with encoding/json and Python's json.
func (r *request) Member(s *scanner, key []byte) *failure.Public {
	var p *failure.Public
	switch string(key) {
	case "model":
		p = r.ReadModel(s)
	case "messages":
		r.hasMessages = true
		r.System, r.Messages, p = decodeMessages(s)
	case "max_completion_tokens":
		r.maxCompletion, p = positiveInt(s, words.Field("max_completion_tokens"))
	case "max_tokens":
		r.maxTokens, p = positiveInt(s, words.Field("max_tokens"))
	case "n":
		p = decodeN(s)
	case "temperature":
		r.Temperature, p = s.Range(words.Field("temperature"), 0, 2)
	case "top_p":
		r.TopP, p = s.Range(words.Field("top_p"), 0, 1)
	case "presence_penalty", "frequency_penalty":
		_, p = s.Range(words.Field(string(key)), -2, 2)
	case "stop":
		r.Stop, p = decodeStop(s)
	case "stream":
		if isNull, np := s.Null(); isNull || np != nil {
			r.Stream, p = false, np
			break
		}
		r.Stream, p = s.Bool(words.Field("stream"))
	case "stream_options":
		r.StreamOptions, r.IncludeUsage, p = decodeStreamOptions(s)
	case "tools":
		r.Tools, p = decodeTools(s)
	case "tool_choice":
		r.ToolChoice, r.toolChoiceAt, p = decodeToolChoice(s)
	case "parallel_tool_calls":
		r.ParallelToolCalls, p = s.OptBool(words.Field("parallel_tool_calls"))
	case "response_format":
		r.ResponseFormat, p = decodeResponseFormat(s)

	// Accepted and ignored: no canonical counterpart, no effect on the answer's shape.
	case "reasoning_effort":
		r.Reasoning, p = reasoningEffort(s, words.Field("reasoning_effort"))
	case "user", "safety_identifier", "service_tier", "prompt_cache_key", "prompt_cache_retention", "verbosity":
		_, _, p = s.OptStr(words.Field(string(key)))
	case "store":
		_, p = s.OptBool(words.Field("store"))
	case "seed":
		if isNull, np := s.Null(); isNull || np != nil {
			return np
		}
		_, p = s.Int(words.Field("seed"))
	case "metadata":
		p = s.OptObject(words.Field("metadata"))

	// Asked for, but not something the gateway can honour.
	case "logprobs":
		var on *bool
		if on, p = s.OptBool(words.Field("logprobs")); p == nil && on != nil && *on {
			p = words.Unsupported(words.Field("logprobs"), "token log probabilities are not available through every provider")
		}
	case "top_logprobs":
		p = rejectUnlessZero(s, words.Field("top_logprobs"), "token log probabilities are not available through every provider")
	case "logit_bias":
		p = rejectUnlessEmptyObject(s, words.Field("logit_bias"), "token biases are provider-specific")
	case "modalities":
		p = decodeModalities(s)
	case "audio":
		p = s.RejectUnlessNull(words.Field("audio"), "audio output is not supported")
	case "prediction":
		p = s.RejectUnlessNull(words.Field("prediction"), "predicted outputs are not supported")
	case "web_search_options":
		p = s.RejectUnlessNull(words.Field("web_search_options"), "built-in web search is not supported")
	case "functions":
		p = s.RejectUnlessNull(words.Field("functions"), "it is deprecated; use 'tools'")
	case "function_call":
		p = s.RejectUnlessNull(words.Field("function_call"), "it is deprecated; use 'tool_choice'")
	default:
		// OpenAI's own wording and param for an unknown argument.
		return failure.BadRequest(string(key), "Unrecognized request argument supplied: %s", key)
	}
	return p
}

// Check applies the rules that span several fields.
func (r *request) Check() *failure.Public {
	switch p := r.CheckModel(&words); {
	case p != nil:
		return p
	case !r.hasMessages:
		return words.Missing(words.Field("messages"))
	case r.maxTokens != 0 && r.maxCompletion != 0 && r.maxTokens != r.maxCompletion:
		return words.Bad(words.Field("max_tokens"), "'max_tokens' and 'max_completion_tokens' were both given with different values; send only 'max_completion_tokens' ('max_tokens' is deprecated).")
	}
	if p := r.CheckStreamOptions(&words); p != nil {
		return p
	}
	if r.ToolChoice != nil && len(r.Tools) == 0 {
		return words.Bad(words.Field("tool_choice"), "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
	}
	r.MaxTokens = max(r.maxCompletion, r.maxTokens)
	if tc := r.ToolChoice; tc != nil && tc.Mode == canonical.ToolChoiceTool && !dialect.Declared(r.Tools, tc.Name) {
		return words.Bad(r.toolChoiceAt, "Invalid value for '%s': no tool named '%s' is declared in 'tools'.", r.toolChoiceAt, tc.Name)
	}
	return nil
}

func positiveInt(s *scanner, l loc) (int, *failure.Public) {
	if isNull, p := s.Null(); isNull || p != nil {
		return 0, p
	}
	n, p := s.Int(l)
	if p == nil && n < 1 {
		p = words.Bad(l, "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", l, n)
	}
	return n, p
}

func decodeN(s *scanner) *failure.Public {
	l := words.Field("n")
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	n, p := s.Int(l)
	switch {
	case p != nil:
		return p
	case n > 1:
		return words.Bad(l, "n>1 is not supported: this gateway returns one choice per request; send several requests instead.")
	case n < 1:
		return words.Bad(l, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got %d instead.", n)
	}
	return nil
}

// reasoningEffort reads reasoning_effort: "none" turns reasoning off, any
// other level asks for it at that effort (each rung maps the level onto
// what its provider has).
func reasoningEffort(s *scanner, l loc) (*canonical.Reasoning, *failure.Public) {
	switch e, p := s.OptEnum(l, "none", "minimal", "low", "medium", "high", "xhigh", "max"); e {
	case "":
		return nil, p
	case "none":
		return &canonical.Reasoning{Mode: canonical.ReasoningOff}, nil
	default:
		return &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: e}, nil
	}
}

func rejectUnlessZero(s *scanner, l loc, why string) *failure.Public {
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	n, p := s.Int(l)
	if p == nil && n != 0 {
		p = words.Unsupported(l, why)
	}
	return p
}

func rejectUnlessEmptyObject(s *scanner, l loc, why string) *failure.Public {
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	if p := s.Object(l); p != nil {
		return p
	}
	_, ok, p := s.NextKey(true)
	if p != nil {
		return p
	}
	if ok {
		return words.Unsupported(l, why)
	}
	return nil
}

func decodeModalities(s *scanner) *failure.Public {
	l := words.Field("modalities")
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	return s.Elements(l, func(i int) *failure.Public {
		m, p := s.StrRaw(l.At(i))
		if p == nil && string(m) != "text" {
			p = words.Unsupported(l.At(i), "only the \"text\" modality is available")
		}
		return p
	})
}

// decodeStop reads a string or an array of at most 4 non-empty strings.
func decodeStop(s *scanner) ([]string, *failure.Public) {
	l := words.Field("stop")
	switch s.Peek() {
	case 'n':
		return nil, s.Literal("null")
	case '"':
		v, p := s.Str(l)
		if p == nil && v == "" {
			p = words.Bad(l, "Invalid 'stop': a stop sequence must not be empty.")
		}
		if p != nil {
			return nil, p
		}
		return []string{v}, nil
	case '[':
	default:
		return nil, s.TypeErr(l, "a string or an array of strings")
	}
	s.Open()
	var out []string
	if _, p := s.Items(func(i int) *failure.Public {
		if i == 4 {
			return words.Bad(l, "Invalid 'stop': array too long. Expected at most 4 stop sequences.")
		}
		v, p := s.Str(l.At(i))
		if p == nil && v == "" {
			p = words.Bad(l.At(i), "Invalid '%s': a stop sequence must not be empty.", l.At(i))
		}
		out = append(out, v)
		return p
	}); p != nil {
		return nil, p
	}
	return out, nil
}

// decodeStreamOptions returns whether options were given and include_usage.
func decodeStreamOptions(s *scanner) (given, includeUsage bool, _ *failure.Public) {
	l := words.Field("stream_options")
	if isNull, p := s.Null(); isNull || p != nil {
		return false, false, p
	}
	p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "include_usage":
			var b, set bool
			if b, set, p = s.MaybeBool(l.F("include_usage")); set {
				includeUsage = b
			}
		case "include_obfuscation":
			// The gateway never pads deltas, so either value is honoured.
			_, _, p = s.MaybeBool(l.F("include_obfuscation"))
		}
		return p
	})
	if p != nil {
		return false, false, p
	}
	return true, includeUsage, nil
}
