package anthropicmsgs

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/anthropicbeta"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

// The anthropic-version values the dialect speaks. The official SDKs send
// Version20230601 (anthropic-sdk-go v1, @anthropic-ai/sdk 0.x) or
// Version20261021 (anthropic-sdk-go v2, @anthropic-ai/sdk 1.x). Requests and
// answers have the same shape under both; 2026-10-21 refuses temperature,
// top_p and top_k (Anthropic's versioning page and its migration guide).
const (
	Version20230601 = "2023-06-01"
	Version20261021 = "2026-10-21"
)

// Decode validates an Anthropic Messages request (body and headers) and
// returns it in canonical form. Anything malformed, or asking for something
// the gateway cannot honour, is a 400 naming the field (Param is the
// field's dotted path, e.g. messages.2.content.0.text, or the header's
// name), worded like Anthropic's own errors.
//
// Headers: anthropic-version is required, as the real API requires it (a
// nil h counts as no headers). A dated version after 2026-10-21 is spoken
// with 2026-10-21's semantics, the newest this gateway knows. anthropic-beta
// flags are kept on the request: rungs that cannot honour one are skipped
// (package anthropicbeta says which).
//
// Null is treated as absent for every optional field. metadata,
// service_tier, speed "standard", and every cache_control are checked and
// ignored: they are hints or bookkeeping that never change the answer.
//
// The request's strings and raw schemas share one private copy of the body,
// so the caller may reuse body at once.
func (*Dialect) Decode(body []byte, h http.Header) (*canonical.Request, *failure.Public) {
	version, betas, p := checkHeaders(h)
	if p != nil {
		return nil, p
	}
	req, p := decodeBody(body, version, false)
	if p != nil {
		return nil, p
	}
	req.AnthropicVersion, req.Betas = version, betas
	return req, nil
}

// DecodeCount validates a count_tokens request: a Messages request without
// the fields that shape an answer (max_tokens, stream, stop sequences,
// sampling, metadata), which that endpoint refuses as extra inputs.
func (*Dialect) DecodeCount(body []byte, h http.Header) (*canonical.Request, *failure.Public) {
	version, betas, p := checkHeaders(h)
	if p != nil {
		return nil, p
	}
	req, p := decodeBody(body, version, true)
	if p != nil {
		return nil, p
	}
	req.AnthropicVersion, req.Betas = version, betas
	return req, nil
}

// AppendCount appends count_tokens' answer.
func (*Dialect) AppendCount(dst []byte, tokens int) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(tokens), 10)
	return append(dst, '}')
}

// countOnly lists the members a count_tokens request may not carry.
var countRefused = map[string]bool{"max_tokens": true, "stream": true, "stop_sequences": true, "temperature": true,
	"top_p": true, "top_k": true, "metadata": true, "service_tier": true, "thread": true, "inference_geo": true}

// Version reads anthropic-version: the version the gateway speaks for the
// value the caller sent, or a caller error.
func Version(h http.Header) (string, *failure.Public) {
	v := h.Values("Anthropic-Version") // canonical: no allocation
	switch {
	case len(v) == 0:
		return "", failure.BadRequest("anthropic-version", "anthropic-version: header is required")
	case len(v) > 1:
		return "", failure.BadRequest("anthropic-version", "anthropic-version: send one version, not %d", len(v))
	case v[0] == Version20230601:
		return Version20230601, nil
	case isDate(v[0]) && v[0] >= Version20261021:
		return Version20261021, nil
	}
	return "", failure.BadRequest("anthropic-version", "anthropic-version: %q is not a valid version; this gateway speaks %s and %s", v[0], Version20230601, Version20261021)
}

// isDate reports whether s has the form YYYY-MM-DD.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

func checkHeaders(h http.Header) (string, []string, *failure.Public) {
	version, p := Version(h)
	if p != nil {
		return "", nil, p
	}
	betas, err := anthropicbeta.Parse(h.Values("Anthropic-Beta"))
	if err != nil {
		return "", nil, failure.BadRequest("anthropic-beta", "anthropic-beta: %v (at most %d flags of at most %d characters)", err, anthropicbeta.MaxFlags, anthropicbeta.MaxFlagLen)
	}
	return version, betas, nil
}

// request holds what the top-level loop has read so far.
type request struct {
	canonical.Request
	version string
	// count: a count_tokens request (max_tokens is not required).
	count bool
	// effort is output_config.effort, joined to the thinking settings once
	// all fields are read.
	effort                              string
	hasModel, hasMaxTokens, hasMessages bool
}

// Canonical is the request in canonical form.
func (r *request) Canonical() *canonical.Request {
	r.IncludeUsage = r.Stream // an Anthropic stream always reports usage
	return &r.Request
}

// decodeBody reads a Messages request body (count: a count_tokens one).
// Its strings and raw schemas share one private copy of body.
func decodeBody(body []byte, version string, count bool) (*canonical.Request, *failure.Public) {
	r := &request{version: version, count: count}
	var s scanner
	return fields.Decode(&s, body, &words, r, func(key []byte) *failure.Public { return r.Member(&s, key) })
}

// Member reads one top-level member. Duplicate keys: the last one wins, as
// with encoding/json.
func (r *request) Member(s *scanner, key []byte) *failure.Public {
	var p *failure.Public
	if r.count && countRefused[string(key)] {
		return words.Unknown(words.Field(string(key)))
	}
	switch k := string(key); k {
	case "model":
		r.hasModel = true
		if r.Model, p = s.Str(words.Field(k)); p == nil && r.Model == "" {
			p = words.Bad(words.Field(k), "String should have at least 1 character")
		}
	case "max_tokens":
		r.hasMaxTokens = true
		r.MaxTokens, p = s.Int(words.Field(k))
		switch {
		case p != nil:
		case r.MaxTokens == 0:
			p = words.Bad(words.Field(k), "max_tokens 0 only warms Anthropic's prompt cache, which this gateway does not do; send max_tokens >= 1")
		case r.MaxTokens < 0:
			p = words.Bad(words.Field(k), "Input should be greater than or equal to 1")
		}
	case "messages":
		r.hasMessages = true
		r.Messages, p = decodeMessages(s)
	case "system":
		r.System, p = decodeSystem(s)
	case "stop_sequences":
		r.Stop, p = decodeStop(s)
	case "temperature":
		if p = r.sampling(s, k); p == nil {
			r.Temperature, p = s.Range(words.Field(k), 0, 1)
		}
	case "top_p":
		if p = r.sampling(s, k); p == nil {
			r.TopP, p = s.Range(words.Field(k), 0, 1)
		}
	case "top_k":
		if p = r.sampling(s, k); p == nil {
			r.TopK, p = getTopK(s, words.Field(k))
		}
	case "thread":
		// Message threads keep a conversation on Anthropic's servers; this
		// gateway is stateless. The error code tells the SDKs' tool runners
		// to resend the whole conversation without a thread.
		if isNull, np := s.Null(); isNull || np != nil {
			p = np
			break
		}
		if p = s.Skip(); p == nil {
			p = words.Bad(words.Field(k), "message threads are not supported by this gateway, which keeps no conversation; send the whole conversation in 'messages'")
			p.ErrorCode = "thread_unsupported_request"
		}
	case "stream":
		if isNull, np := s.Null(); isNull || np != nil {
			r.Stream, p = false, np
			break
		}
		r.Stream, p = s.Bool(words.Field(k))
	case "tools":
		r.Tools, p = decodeTools(s)
	case "tool_choice":
		r.ToolChoice, r.ParallelToolCalls, p = decodeToolChoice(s)

	// Accepted and ignored: bookkeeping and hints that never change the answer.
	case "metadata":
		p = decodeMetadata(s)
	case "service_tier":
		_, p = s.OptEnum(words.Field(k), "auto", "standard_only")
	case "cache_control":
		p = cacheControl(s, words.Field(k))
	case "speed":
		p = decodeSpeed(s)
	case "thinking":
		r.Reasoning, p = decodeThinking(s)

	// Real parameters the gateway cannot honour on every provider.
	case "output_config":
		r.effort, r.ResponseFormat, p = decodeOutputConfig(s)
	case "output_format":
		// The deprecated beta spelling of output_config.format.
		r.ResponseFormat, p = decodeFormat(s, words.Field(k))
	case "inference_geo":
		p = s.RejectUnlessNull(words.Field(k), "where a request runs is set by the gateway's routes")
	case "container", "mcp_servers", "context_management":
		p = s.RejectUnlessNull(words.Field(k), "it needs Anthropic's server-side tools")
	case "diagnostics":
		p = s.RejectUnlessNull(words.Field(k), "Anthropic's cache diagnostics are not available through every provider")
	default:
		p = words.Unknown(words.Field(k))
	}
	return p
}

// sampling refuses temperature, top_p and top_k under 2026-10-21, which
// removed them (a 400 even at their defaults), unless null.
func (r *request) sampling(s *scanner, k string) *failure.Public {
	if r.version != Version20261021 || s.Peek() == 'n' {
		return nil
	}
	if p := s.Skip(); p != nil {
		return p
	}
	return words.Bad(words.Field(k), "%s is not accepted with anthropic-version %s, which removed temperature, top_p and top_k; leave it out (the model samples with its defaults), or send anthropic-version %s", k, Version20261021, Version20230601)
}

// Check applies the rules that span several fields.
func (r *request) Check() *failure.Public {
	switch {
	case !r.hasMaxTokens && !r.count:
		return words.Missing(words.Field("max_tokens"))
	case !r.hasMessages:
		return words.Missing(words.Field("messages"))
	case !r.hasModel:
		return words.Missing(words.Field("model"))
	}
	if th := r.Reasoning; th != nil && th.Mode == canonical.ReasoningBudget && r.hasMaxTokens && th.BudgetTokens >= r.MaxTokens {
		return words.Bad(words.Field("max_tokens"), "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
	}
	if r.effort != "" {
		if r.Reasoning == nil {
			// Effort without thinking shapes how much the model writes,
			// not whether it thinks.
			r.Reasoning = &canonical.Reasoning{}
		}
		r.Reasoning.Effort = r.effort
	}
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	switch tc.Mode {
	case canonical.ToolChoiceRequired, canonical.ToolChoiceTool:
		if len(r.Tools) == 0 {
			return words.Bad(words.Field("tool_choice"), "tool_choice of type '%s' may only be specified while providing tools", choiceType(tc.Mode))
		}
	}
	if tc.Mode == canonical.ToolChoiceTool && !dialect.Declared(r.Tools, tc.Name) {
		return words.Bad(words.Field("tool_choice").F("name"), "no tool named '%s' is declared in 'tools'", tc.Name)
	}
	return nil
}

func choiceType(m canonical.ToolChoiceMode) string {
	if m == canonical.ToolChoiceRequired {
		return "any"
	}
	return string(m)
}

func decodeMetadata(s *scanner) *failure.Public {
	l := words.Field("metadata")
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	return s.Fields(l, func(key []byte) (p *failure.Public) {
		if string(key) == "user_id" {
			_, _, p = s.OptStr(l.F("user_id"))
		}
		return p
	})
}

// decodeSpeed accepts "standard", the default; "fast" is a capacity tier
// only some providers sell.
func decodeSpeed(s *scanner) *failure.Public {
	l := words.Field("speed")
	switch v, given, p := s.OptStr(l); {
	case p != nil || !given || v == "standard":
		return p
	case v == "fast":
		return words.Unsupported(l, "fast mode is not available through every provider")
	}
	return words.Bad(l, "Input should be 'standard' or 'fast'")
}

// decodeThinking reads thinking: enabled (with budget_tokens, at least
// 1024 and below max_tokens, checked once both are read), adaptive, or
// disabled; display summarized or omitted shows or hides the reasoning.
// between_tools is refused: no rung but Anthropic's has it.
func decodeThinking(s *scanner) (*canonical.Reasoning, *failure.Public) {
	l := words.Field("thinking")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var (
		hasBudget bool
		r         canonical.Reasoning
	)
	if p := s.Typed(l, fields.TypeRequired|fields.Deferred, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "budget_tokens":
			hasBudget = true
			r.BudgetTokens, p = s.Int(l.F("budget_tokens"))
		case "display":
			p = thinkingDisplay(s, l.F("display"), &r)
		}
		return p
	}, func(typ []byte) *failure.Public {
		return thinkingMode(l, typ, hasBudget, &r)
	}); p != nil {
		return nil, p
	}
	if hasBudget && r.Mode != canonical.ReasoningBudget {
		return nil, words.Unknown(l.F("budget_tokens"))
	}
	return &r, nil
}

// thinkingDisplay reads display (null is absent): summarized shows the
// reasoning, omitted hides it.
func thinkingDisplay(s *scanner, l path, r *canonical.Reasoning) *failure.Public {
	switch v, p := s.OptEnum(l, "summarized", "omitted"); v {
	case "summarized":
		r.Show = true
	case "omitted":
		r.Hide = true
	default:
		return p
	}
	return nil
}

// thinkingMode sets r's mode from the thinking type typ at l, checking the
// budget an enabled mode needs.
func thinkingMode(l path, typ []byte, hasBudget bool, r *canonical.Reasoning) *failure.Public {
	switch string(typ) {
	case "disabled":
		r.Mode = canonical.ReasoningOff
	case "adaptive":
		r.Mode = canonical.ReasoningAdaptive
	case "enabled":
		r.Mode = canonical.ReasoningBudget
		switch {
		case !hasBudget:
			return words.Missing(l.F("budget_tokens"))
		case r.BudgetTokens < 1024:
			return words.Bad(l.F("budget_tokens"), "Input should be greater than or equal to 1024")
		}
	case "between_tools":
		return words.Unsupported(l.F("type"), "thinking only between tool calls is not available through every provider of a model; use 'enabled' or 'adaptive'")
	default:
		return words.Bad(l.F("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'", typ)
	}
	return nil
}

// decodeOutputConfig reads output_config: effort (low, medium, high,
// xhigh, max) and format, a JSON schema the answer must follow.
func decodeOutputConfig(s *scanner) (effort string, format *canonical.ResponseFormat, _ *failure.Public) {
	l := words.Field("output_config")
	if isNull, p := s.Null(); isNull || p != nil {
		return "", nil, p
	}
	p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "effort":
			p = decodeEffort(s, l.F("effort"), &effort)
		case "format":
			format, p = decodeFormat(s, l.F("format"))
		case "task_budget":
			p = s.RejectUnlessNull(l.F("task_budget"), "task budgets are not available through every provider of a model")
		}
		return p
	})
	if p != nil {
		return "", nil, p
	}
	return effort, format, nil
}

// decodeEffort reads output_config.effort into effort (null leaves it).
func decodeEffort(s *scanner, l path, effort *string) *failure.Public {
	v, p := s.OptEnum(l, "low", "medium", "high", "xhigh", "max")
	if v != "" {
		*effort = v
	}
	return p
}

// decodeFormat reads a structured-output format: {"type":"json_schema",
// "schema":{...}}.
func decodeFormat(s *scanner, l path) (*canonical.ResponseFormat, *failure.Public) {
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var (
		typ       []byte
		schema    []byte
		hasSchema bool
	)
	// Not Typed: an absent type is reported as a wrong one, as Anthropic does.
	if p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			typ, p = s.StrRaw(l.F("type"))
		case "schema":
			hasSchema = true
			schema, p = readSchema(s, l.F("schema"))
		}
		return p
	}); p != nil {
		return nil, p
	}
	switch {
	case string(typ) != "json_schema":
		return nil, words.Bad(l.F("type"), "Input should be 'json_schema'")
	case !hasSchema:
		return nil, words.Missing(l.F("schema"))
	}
	return &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: schema, Strict: true}, nil
}

// decodeStop reads stop_sequences: an array of strings with content.
func decodeStop(s *scanner) ([]string, *failure.Public) {
	l := words.Field("stop_sequences")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var out []string
	if p := s.Elements(l, func(i int) *failure.Public {
		v, p := s.Str(l.At(i))
		if p == nil && strings.TrimSpace(v) == "" {
			p = words.Bad(l.At(i), "each stop sequence must contain non-whitespace")
		}
		out = append(out, v)
		return p
	}); p != nil {
		return nil, p
	}
	return out, nil
}
