package openaichat

import (
	"bytes"
	"net/http"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/jsonscan"
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
	s := scanner{jsonscan.New(bytes.Clone(body))}
	req, p := decodeRequest(&s)
	if p != nil && !s.IsSyntax(p) {
		// A parse-then-validate server reports broken JSON before any
		// field error, wherever in the body the break is.
		if sp := jsonscan.Validate(body); sp != nil {
			return nil, sp
		}
	}
	if p != nil {
		return nil, p
	}
	return req, nil
}

// request holds what the top-level loop has read so far.
type request struct {
	canonical.Request
	hasModel, hasMessages bool
	maxTokens             int // the deprecated max_tokens, 0 when absent
	maxCompletion         int
	hasStreamOptions      bool
	toolChoiceAt          loc // where the tool_choice's function name was given
}

func decodeRequest(s *scanner) (*canonical.Request, *failure.Public) {
	if s.Peek() != '{' {
		return nil, failure.BadRequest("", "request body must be a JSON object, but got %s instead", s.Kind())
	}
	s.Open()
	var r request
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return nil, p
		}
		if !ok {
			break
		}
		if p := r.field(s, key); p != nil {
			return nil, p
		}
	}
	if p := s.End(); p != nil {
		return nil, p
	}
	if p := r.check(); p != nil {
		return nil, p
	}
	return &r.Request, nil
}

// field reads one top-level member. Duplicate keys: the last one wins, as
// with encoding/json and Python's json.
func (r *request) field(s *scanner, key []byte) *failure.Public {
	var p *failure.Public
	switch string(key) {
	case "model":
		l := field("model")
		r.hasModel = true
		if r.Model, p = s.getString(l); p == nil && r.Model == "" {
			p = bad(l, "Invalid 'model': you must provide a model name.")
		}
	case "messages":
		r.hasMessages = true
		r.System, r.Messages, p = decodeMessages(s)
	case "max_completion_tokens":
		r.maxCompletion, p = s.positiveInt(field("max_completion_tokens"))
	case "max_tokens":
		r.maxTokens, p = s.positiveInt(field("max_tokens"))
	case "n":
		p = s.decodeN()
	case "temperature":
		r.Temperature, p = s.getRange(field("temperature"), 0, 2)
	case "top_p":
		r.TopP, p = s.getRange(field("top_p"), 0, 1)
	case "presence_penalty", "frequency_penalty":
		_, p = s.getRange(field(string(key)), -2, 2)
	case "stop":
		r.Stop, p = decodeStop(s)
	case "stream":
		if isNull, np := s.skipNull(); isNull || np != nil {
			r.Stream, p = false, np
			break
		}
		r.Stream, p = s.getBool(field("stream"))
	case "stream_options":
		r.hasStreamOptions, r.IncludeUsage, p = decodeStreamOptions(s)
	case "tools":
		r.Tools, p = decodeTools(s)
	case "tool_choice":
		r.ToolChoice, r.toolChoiceAt, p = decodeToolChoice(s)
	case "parallel_tool_calls":
		r.ParallelToolCalls, p = s.optBool(field("parallel_tool_calls"))
	case "response_format":
		r.ResponseFormat, p = decodeResponseFormat(s)

	// Accepted and ignored: no canonical counterpart, no effect on the answer's shape.
	case "reasoning_effort":
		r.Reasoning, p = s.reasoningEffort(field("reasoning_effort"))
	case "user", "safety_identifier", "service_tier", "prompt_cache_key", "prompt_cache_retention", "verbosity":
		p = s.optString(field(string(key)))
	case "store":
		_, p = s.optBool(field("store"))
	case "seed":
		if isNull, np := s.skipNull(); isNull || np != nil {
			return np
		}
		_, p = s.getInt(field("seed"))
	case "metadata":
		p = s.optObject(field("metadata"))

	// Asked for, but not something the gateway can honour.
	case "logprobs":
		var on *bool
		if on, p = s.optBool(field("logprobs")); p == nil && on != nil && *on {
			p = unsupported(field("logprobs"), "token log probabilities are not available through every provider")
		}
	case "top_logprobs":
		p = s.rejectUnlessZero(field("top_logprobs"), "token log probabilities are not available through every provider")
	case "logit_bias":
		p = s.rejectUnlessEmptyObject(field("logit_bias"), "token biases are provider-specific")
	case "modalities":
		p = decodeModalities(s)
	case "audio":
		p = s.rejectUnlessNull(field("audio"), "audio output is not supported")
	case "prediction":
		p = s.rejectUnlessNull(field("prediction"), "predicted outputs are not supported")
	case "web_search_options":
		p = s.rejectUnlessNull(field("web_search_options"), "built-in web search is not supported")
	case "functions":
		p = s.rejectUnlessNull(field("functions"), "it is deprecated; use 'tools'")
	case "function_call":
		p = s.rejectUnlessNull(field("function_call"), "it is deprecated; use 'tool_choice'")
	default:
		// OpenAI's own wording and param for an unknown argument.
		return failure.BadRequest(string(key), "Unrecognized request argument supplied: %s", key)
	}
	return p
}

// check applies the rules that span several fields.
func (r *request) check() *failure.Public {
	switch {
	case !r.hasModel:
		return missing(field("model"))
	case !r.hasMessages:
		return missing(field("messages"))
	case r.maxTokens != 0 && r.maxCompletion != 0 && r.maxTokens != r.maxCompletion:
		return bad(field("max_tokens"), "'max_tokens' and 'max_completion_tokens' were both given with different values; send only 'max_completion_tokens' ('max_tokens' is deprecated).")
	case r.hasStreamOptions && !r.Stream:
		return bad(field("stream_options"), "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	case r.ToolChoice != nil && len(r.Tools) == 0:
		return bad(field("tool_choice"), "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
	}
	r.MaxTokens = max(r.maxCompletion, r.maxTokens)
	if tc := r.ToolChoice; tc != nil && tc.Mode == canonical.ToolChoiceTool && !dialect.Declared(r.Tools, tc.Name) {
		return bad(r.toolChoiceAt, "Invalid value for '%s': no tool named '%s' is declared in 'tools'.", r.toolChoiceAt, tc.Name)
	}
	return nil
}

func (s *scanner) positiveInt(l loc) (int, *failure.Public) {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return 0, p
	}
	n, p := s.getInt(l)
	if p == nil && n < 1 {
		p = bad(l, "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", l, n)
	}
	return n, p
}

func (s *scanner) decodeN() *failure.Public {
	l := field("n")
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	n, p := s.getInt(l)
	switch {
	case p != nil:
		return p
	case n > 1:
		return bad(l, "n>1 is not supported: this gateway returns one choice per request; send several requests instead.")
	case n < 1:
		return bad(l, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got %d instead.", n)
	}
	return nil
}

func (s *scanner) optBool(l loc) (*bool, *failure.Public) {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return nil, p
	}
	b, p := s.getBool(l)
	if p != nil {
		return nil, p
	}
	return &b, nil
}

// reasoningEffort reads reasoning_effort: "none" turns reasoning off, any
// other level asks for it at that effort (each rung maps the level onto
// what its provider has).
func (s *scanner) reasoningEffort(l loc) (*canonical.Reasoning, *failure.Public) {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return nil, p
	}
	v, p := s.getStringRaw(l)
	if p != nil {
		return nil, p
	}
	switch e := string(v); e {
	case "none":
		return &canonical.Reasoning{Mode: canonical.ReasoningOff}, nil
	case "minimal", "low", "medium", "high", "xhigh", "max":
		return &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: e}, nil
	}
	return nil, bad(l, "Invalid value for '%s': '%s'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', 'xhigh' and 'max'.", l, v)
}

func (s *scanner) optString(l loc) *failure.Public {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	_, p := s.getStringRaw(l)
	return p
}

func (s *scanner) optObject(l loc) *failure.Public {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	if s.Peek() != '{' {
		return s.typeErr(l, "an object")
	}
	return s.Skip()
}

func (s *scanner) rejectUnlessNull(l loc, why string) *failure.Public {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	return unsupported(l, why)
}

func (s *scanner) rejectUnlessZero(l loc, why string) *failure.Public {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	n, p := s.getInt(l)
	if p == nil && n != 0 {
		p = unsupported(l, why)
	}
	return p
}

func (s *scanner) rejectUnlessEmptyObject(l loc, why string) *failure.Public {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	if p := s.object(l); p != nil {
		return p
	}
	_, ok, p := s.NextKey(true)
	if p != nil {
		return p
	}
	if ok {
		return unsupported(l, why)
	}
	return nil
}

func decodeModalities(s *scanner) *failure.Public {
	l := field("modalities")
	if isNull, p := s.skipNull(); isNull || p != nil {
		return p
	}
	if p := s.array(l); p != nil {
		return p
	}
	for i := 0; ; i++ {
		ok, p := s.NextElem(i == 0)
		if p != nil || !ok {
			return p
		}
		m, p := s.getStringRaw(l.At(i))
		if p != nil {
			return p
		}
		if string(m) != "text" {
			return unsupported(l.At(i), "only the \"text\" modality is available")
		}
	}
}

// decodeStop reads a string or an array of at most 4 non-empty strings.
func decodeStop(s *scanner) ([]string, *failure.Public) {
	l := field("stop")
	switch s.Peek() {
	case 'n':
		return nil, s.Literal("null")
	case '"':
		v, p := s.Str()
		if p == nil && v == "" {
			p = bad(l, "Invalid 'stop': a stop sequence must not be empty.")
		}
		if p != nil {
			return nil, p
		}
		return []string{v}, nil
	case '[':
	default:
		return nil, s.typeErr(l, "a string or an array of strings")
	}
	s.Open()
	var out []string
	for i := 0; ; i++ {
		ok, p := s.NextElem(i == 0)
		if p != nil {
			return nil, p
		}
		if !ok {
			return out, nil
		}
		if i == 4 {
			return nil, bad(l, "Invalid 'stop': array too long. Expected at most 4 stop sequences.")
		}
		v, p := s.getString(l.At(i))
		if p == nil && v == "" {
			p = bad(l.At(i), "Invalid '%s': a stop sequence must not be empty.", l.At(i))
		}
		if p != nil {
			return nil, p
		}
		out = append(out, v)
	}
}

// decodeStreamOptions returns whether options were given and include_usage.
func decodeStreamOptions(s *scanner) (given, includeUsage bool, p *failure.Public) {
	l := field("stream_options")
	if isNull, p := s.skipNull(); isNull || p != nil {
		return false, false, p
	}
	if p := s.object(l); p != nil {
		return false, false, p
	}
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil || !ok {
			return true, includeUsage, p
		}
		switch string(key) {
		case "include_usage":
			var b *bool
			if b, p = s.optBool(l.F("include_usage")); b != nil {
				includeUsage = *b
			}
		case "include_obfuscation":
			// The gateway never pads deltas, so either value is honoured.
			_, p = s.optBool(l.F("include_obfuscation"))
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return false, false, p
		}
	}
}
