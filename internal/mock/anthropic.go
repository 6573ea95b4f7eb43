package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/sse"
)

// anthropicMessages speaks Anthropic Messages (wire-formats.md section 3).
type anthropicMessages struct{}

var _ wire = anthropicMessages{}

func (anthropicMessages) path() string              { return "/v1/messages" }
func (anthropicMessages) streamContentType() string { return "text/event-stream; charset=utf-8" }
func (anthropicMessages) refusalDeltas() bool       { return false }

func (an anthropicMessages) other(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/v1/messages/count_tokens" {
		return false
	}
	an.countTokens(m, c, w, r)
	return true
}

func (anthropicMessages) validate(sc *Script) error {
	if sc.errorCode != "" {
		return errors.New("anthropic errors have no code; use error_type=")
	}
	return nil
}

func (an anthropicMessages) admit(c *call, r *http.Request, apiKey string) *apiError {
	if apiKey != "" {
		// The 2026-10-21 SDKs send the key as a bearer token; the API takes
		// either.
		key := r.Header.Get("x-api-key")
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && key == "" {
			key = bearer
		}
		switch {
		case key == "":
			return newAPIError(http.StatusUnauthorized, "authentication_error", "", "x-api-key header is required", "")
		case key != apiKey:
			return newAPIError(http.StatusUnauthorized, "authentication_error", "", "invalid x-api-key", "")
		}
	}
	switch v := r.Header.Get("anthropic-version"); v {
	case "":
		return an.badRequest(c, "anthropic-version: header is required")
	case anVersion20230601, anVersion20261021:
		c.version = v
	default:
		return an.badRequest(c, "anthropic-version: "+strconv.Quote(v)+" is not a valid version")
	}
	return nil
}

// The versions the mock speaks: 2026-10-21 refuses temperature, top_p and
// top_k, even at their defaults.
const (
	anVersion20230601 = "2023-06-01"
	anVersion20261021 = "2026-10-21"
)

type anRequest struct {
	Thinking      *anThinking     `json:"thinking"`
	Temperature   json.RawMessage `json:"temperature"`
	TopP          json.RawMessage `json:"top_p"`
	TopK          json.RawMessage `json:"top_k"`
	Model         *string         `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Messages      *[]anMessage    `json:"messages"`
	Stream        *bool           `json:"stream"`
	StopSequences []string        `json:"stop_sequences"`
	Tools         []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
	OutputConfig *struct {
		Format *anOutputFormat `json:"format"`
	} `json:"output_config"`
	// OutputFormat is the deprecated spelling of output_config.format.
	OutputFormat *anOutputFormat `json:"output_format"`
}

type anOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (an anthropicMessages) decode(c *call, body []byte) (*request, *apiError) {
	bad := func(format string, args ...any) (*request, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "invalid_request_error", "", fmt.Sprintf(format, args...), "")
	}
	var in anRequest
	if err := json.Unmarshal(body, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return bad("%s: Input should be a valid %s", te.Field, te.Type)
		}
		return bad("There was an issue with your request body: it is not valid JSON.")
	}
	if c != nil && c.version == anVersion20261021 {
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"temperature", in.Temperature}, {"top_p", in.TopP}, {"top_k", in.TopK}} {
			if len(f.raw) > 0 && string(f.raw) != "null" {
				return bad("%s: Extra inputs are not permitted with anthropic-version %s", f.name, anVersion20261021)
			}
		}
	}
	switch {
	case in.Model == nil:
		return bad("model: Field required")
	case in.MaxTokens == nil:
		return bad("max_tokens: Field required")
	case in.Messages == nil:
		return bad("messages: Field required")
	case *in.Model == "":
		return bad("model: String should have at least 1 character")
	case *in.MaxTokens < 0:
		return bad("max_tokens: Input should be greater than or equal to 0")
	case len(*in.Messages) == 0:
		return bad("messages: List should have at least 1 item after validation, not 0")
	}
	msgs := *in.Messages
	for i, mm := range msgs {
		if mm.Role != "user" && mm.Role != "assistant" {
			return bad("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(mm.Content) == 0 {
			return bad("messages.%d.content: Field required", i)
		}
	}
	req := &request{model: *in.Model, maxTokens: *in.MaxTokens, stops: in.StopSequences, toolChoice: "auto"}
	req.stream = in.Stream != nil && *in.Stream
	var problem string
	if req.thinking, problem = thinkingOf(in.Thinking, *in.MaxTokens); problem != "" {
		return bad("%s", problem)
	}
	if problem := checkThoughts(msgs); problem != "" {
		return bad("%s", problem)
	}
	for _, t := range in.Tools {
		req.tools = append(req.tools, t.Name)
		req.setSchema(t.Name, t.InputSchema)
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "none":
			req.toolChoice = tc.Type
		case "any":
			req.toolChoice = "required"
		case "tool":
			if tc.Name == "" {
				return bad("tool_choice.tool.name: Field required")
			}
			req.toolChoice, req.forcedTool = "tool", tc.Name
		default:
			return bad("tool_choice: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", tc.Type)
		}
		req.noParallel = tc.DisableParallelToolUse
	}
	for _, f := range []struct {
		field  string
		format *anOutputFormat
	}{{"output_format", in.OutputFormat}, {"output_config.format", outputConfigFormat(&in)}} {
		// output_config.format, checked last, wins over output_format.
		switch {
		case f.format == nil:
		case f.format.Type != "json_schema":
			return bad("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'json_schema'", f.field, f.format.Type)
		case len(f.format.Schema) == 0 || string(f.format.Schema) == "null":
			return bad("%s.schema: Field required", f.field)
		default:
			req.format = &jsonFormat{schema: f.format.Schema}
		}
	}
	last := msgs[len(msgs)-1]
	if last.Role == "user" {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(last.Content, &blocks) == nil {
			for _, b := range blocks {
				req.lastIsToolResult = req.lastIsToolResult || b.Type == "tool_result"
			}
		}
	}
	return req, nil
}

// anThinking is the request's thinking setting.
type anThinking struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens"`
	Display      string `json:"display"`
}

// thinkingOf judges thinking as the API does: enabled needs a budget of
// at least 1024 below max_tokens; display omitted hides the text.
func thinkingOf(t *anThinking, maxTokens int) (thinkMode, string) {
	if t == nil {
		return thinkNone, ""
	}
	mode := thinkShown
	if t.Display == "omitted" {
		mode = thinkHidden
	}
	switch t.Type {
	case "disabled":
		return thinkNone, ""
	case "adaptive":
		return mode, ""
	case "enabled":
		switch {
		case t.BudgetTokens == nil:
			return thinkNone, "thinking.enabled.budget_tokens: Field required"
		case *t.BudgetTokens < 1024:
			return thinkNone, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
		case *t.BudgetTokens >= maxTokens:
			return thinkNone, "`max_tokens` must be greater than `thinking.budget_tokens`"
		}
		return mode, ""
	}
	return thinkNone, "thinking: Input tag '" + t.Type + "' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'"
}

// checkThoughts verifies the thinking blocks of the assistant turns sent
// back: each must carry the signature its text was given.
func checkThoughts(msgs []anMessage) string {
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		var blocks []struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for j, b := range blocks {
			if b.Type == "thinking" && !validThought(b.Thinking, b.Signature) {
				return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
			}
		}
	}
	return ""
}

func outputConfigFormat(in *anRequest) *anOutputFormat {
	if in.OutputConfig == nil {
		return nil
	}
	return in.OutputConfig.Format
}

// anTypes maps statuses to Anthropic error types and back (wire-formats.md
// 3.4).
var anTypes = []struct {
	status int
	typ    string
}{
	{400, "invalid_request_error"}, {401, "authentication_error"}, {402, "billing_error"},
	{403, "permission_error"}, {404, "not_found_error"}, {413, "request_too_large"},
	{429, "rate_limit_error"}, {500, "api_error"}, {504, "timeout_error"}, {529, "overloaded_error"},
}

func (an anthropicMessages) statusError(c *call, status int, sc *Script) *apiError {
	org := an.orgID(c)
	model := "claude-sonnet-4-5"
	if c.req != nil {
		model = c.req.model
	}
	var msg string
	switch status {
	case 400:
		msg = "prompt is too long: 215318 tokens > 200000 maximum"
	case 401:
		msg = "invalid x-api-key"
	case 402:
		msg = "Your credit balance is too low to access the Anthropic API: organization " + org + " has a balance of $0.42. Please go to Plans & Billing to upgrade or purchase credits."
	case 403:
		msg = "Your API key does not have permission to use the specified resource."
	case 404:
		msg = "model: " + model
	case 413:
		msg = "Request exceeds the maximum allowed number of bytes."
	case 429:
		msg = "This request would exceed the rate limit for your organization (" + org + ") of 400,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."
	case 500:
		msg = "Internal server error"
	case 504:
		msg = "Request timed out"
	case 529:
		msg = "Overloaded"
	default:
		msg = http.StatusText(status)
		if msg == "" {
			msg = "Error " + strconv.Itoa(status)
		}
	}
	typ := "invalid_request_error" // Anthropic's type for any other 4xx
	if status >= 500 {
		typ = "api_error"
	}
	for _, t := range anTypes {
		if t.status == status {
			typ = t.typ
		}
	}
	return newAPIError(status, typ, "", msg, "").override(sc)
}

func (an anthropicMessages) streamError(c *call, sc *Script) *apiError {
	e := newAPIError(529, "overloaded_error", "", "Overloaded", "").override(sc)
	// A non-streaming request gets the status the error type stands for.
	e.status = 500
	for _, t := range anTypes {
		if t.typ == e.typ {
			e.status = t.status
		}
	}
	return e
}

func (an anthropicMessages) badRequest(c *call, msg string) *apiError {
	return newAPIError(http.StatusBadRequest, "invalid_request_error", "", msg, "")
}

func (an anthropicMessages) notFound(r *http.Request) *apiError {
	return newAPIError(http.StatusNotFound, "not_found_error", "", "Not Found", "")
}

func (an anthropicMessages) methodError(r *http.Request) *apiError {
	return newAPIError(http.StatusMethodNotAllowed, "invalid_request_error", "", "Method Not Allowed", "")
}

func (an anthropicMessages) errorObject(e *apiError) []byte {
	b := marshal(struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{e.typ, e.message})
	return b
}

func (an anthropicMessages) writeError(c *call, w http.ResponseWriter, e *apiError) {
	h := w.Header()
	an.headers(c, h, e.status)
	setRetryHeaders(h, e)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	b := fmt.Appendf(nil, `{"type":"error","error":%s,"request_id":%s}`+"\n", an.errorObject(e), jsonText(an.requestID(c)))
	w.Write(b)
}

func (an anthropicMessages) requestID(c *call) string { return c.id("req_011C", 20, 1) }
func (an anthropicMessages) messageID(c *call) string { return c.id("msg_01", 22, 2) }
func (an anthropicMessages) toolID(c *call, i int) string {
	return c.id("toolu_01", 22, 100+uint64(i))
}

func (an anthropicMessages) orgID(c *call) string {
	h := c.hexID("", 32, 7)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (an anthropicMessages) headers(c *call, h http.Header, status int) {
	h.Set("request-id", an.requestID(c))
	h.Set("anthropic-organization-id", an.orgID(c))
	rem := func(limit int) string {
		if status == http.StatusTooManyRequests {
			return "0"
		}
		return strconv.Itoa(limit - 1)
	}
	reset := resetTime(time.Second)
	for _, l := range []struct {
		name  string
		limit int
	}{{"requests", 4000}, {"tokens", 2400000}, {"input-tokens", 2000000}, {"output-tokens", 400000}} {
		h.Set("anthropic-ratelimit-"+l.name+"-limit", strconv.Itoa(l.limit))
		h.Set("anthropic-ratelimit-"+l.name+"-remaining", rem(l.limit))
		h.Set("anthropic-ratelimit-"+l.name+"-reset", reset)
	}
}

func (an anthropicMessages) stopReason(a *answer) string {
	switch a.stop {
	case stopLength:
		return "max_tokens"
	case stopSequence:
		return "stop_sequence"
	case stopTool:
		return "tool_use"
	case stopRefusal:
		return "refusal"
	}
	return "end_turn"
}

type anStopDetails struct {
	Type        string  `json:"type"`
	Category    *string `json:"category"`
	Explanation string  `json:"explanation"`
}

func (an anthropicMessages) stopDetails(a *answer) *anStopDetails {
	if a.stop != stopRefusal {
		return nil
	}
	return &anStopDetails{Type: "refusal", Explanation: a.refusalNote}
}

type anCacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

type anUsage struct {
	InputTokens              int              `json:"input_tokens"`
	CacheCreationInputTokens int              `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int              `json:"cache_read_input_tokens"`
	CacheCreation            *anCacheCreation `json:"cache_creation,omitempty"`
	OutputTokens             int              `json:"output_tokens"`
	OutputTokensDetails      *anOutputDetails `json:"output_tokens_details,omitempty"`
	ServiceTier              string           `json:"service_tier,omitempty"`
}

// anOutputDetails says how much of output_tokens was thinking.
type anOutputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

// usage reports cached tokens apart from input_tokens, as Anthropic does.
func (an anthropicMessages) usage(a *answer, output int, full bool) anUsage {
	u := anUsage{InputTokens: a.input - a.cached, CacheReadInputTokens: a.cached, OutputTokens: output}
	if len(a.thought) > 0 && output > 1 {
		u.OutputTokensDetails = &anOutputDetails{ThinkingTokens: len(a.thought)}
	}
	if full {
		u.CacheCreation, u.ServiceTier = &anCacheCreation{}, "standard"
	}
	return u
}

type anBlock struct {
	Type      string          `json:"type"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anMessageOut struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []anBlock      `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	StopDetails  *anStopDetails `json:"stop_details"`
	Usage        anUsage        `json:"usage"`
}

func (an anthropicMessages) body(c *call, a *answer) []byte {
	out := anMessageOut{
		ID: an.messageID(c), Type: "message", Role: "assistant", Model: a.model,
		Content:    []anBlock{},
		StopReason: nullable(an.stopReason(a)), StopSequence: nullable(a.stopSeq), StopDetails: an.stopDetails(a),
		Usage: an.usage(a, a.output, true),
	}
	if len(a.thought) > 0 {
		t := ""
		if !a.thoughtHide {
			t = strings.Join(a.thought, "")
		}
		out.Content = append(out.Content, anBlock{Type: "thinking", Thinking: &t, Signature: &a.signature})
	}
	if len(a.text) > 0 {
		s := strings.Join(a.text, "")
		out.Content = append(out.Content, anBlock{Type: "text", Text: &s})
	}
	for i, tc := range a.calls {
		out.Content = append(out.Content, anBlock{Type: "tool_use", ID: an.toolID(c, i), Name: tc.name, Input: json.RawMessage(tc.args)})
	}
	b := marshal(out)
	return b
}

// anEvent is one stream event; field order follows the real API (type
// first).
type anEvent struct {
	Type         string        `json:"type"`
	Message      *anMessageOut `json:"message,omitempty"`
	Index        *int          `json:"index,omitempty"`
	ContentBlock *anBlock      `json:"content_block,omitempty"`
	Delta        any           `json:"delta,omitempty"`
	Usage        *anUsage      `json:"usage,omitempty"`
}

type anTextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anThinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

type anSignatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

type anJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anMessageDelta struct {
	StopReason   string         `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	StopDetails  *anStopDetails `json:"stop_details"`
}

func (an anthropicMessages) events(c *call, a *answer) []event {
	var evs []event
	add := func(kind eventKind, ev anEvent) {
		data := marshal(ev)
		evs = append(evs, event{kind, sse.AppendEvent(nil, ev.Type, data)})
	}
	pinged := false
	delta := func(index int, d any) {
		add(evContent, anEvent{Type: "content_block_delta", Index: &index, Delta: d})
		if !pinged { // real streams carry a ping early on; clients must skip it
			pinged = true
			evs = append(evs, event{evProtocol, []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")})
		}
	}
	// message_start reports a small output count, as the real API does; the
	// cumulative total comes in message_delta.
	start := anMessageOut{ID: an.messageID(c), Type: "message", Role: "assistant", Model: a.model, Content: []anBlock{}, Usage: an.usage(a, 1, true)}
	add(evProtocol, anEvent{Type: "message_start", Message: &start})
	block := func(index int, b anBlock, deltas []any) {
		add(evProtocol, anEvent{Type: "content_block_start", Index: &index, ContentBlock: &b})
		for _, d := range deltas {
			delta(index, d)
		}
		add(evProtocol, anEvent{Type: "content_block_stop", Index: &index})
	}
	index := 0
	if len(a.thought) > 0 {
		var ds []any
		if !a.thoughtHide {
			for _, t := range a.thought {
				ds = append(ds, anThinkingDelta{"thinking_delta", t})
			}
		}
		ds = append(ds, anSignatureDelta{"signature_delta", a.signature})
		empty, noSig := "", ""
		block(index, anBlock{Type: "thinking", Thinking: &empty, Signature: &noSig}, ds)
		index++
	}
	if len(a.text) > 0 {
		var ds []any
		for _, t := range a.text {
			ds = append(ds, anTextDelta{"text_delta", t})
		}
		empty := ""
		block(index, anBlock{Type: "text", Text: &empty}, ds)
		index++
	}
	for i, tc := range a.calls {
		var ds []any
		for _, f := range tc.fragments {
			ds = append(ds, anJSONDelta{"input_json_delta", f})
		}
		block(index, anBlock{Type: "tool_use", ID: an.toolID(c, i), Name: tc.name, Input: json.RawMessage("{}")}, ds)
		index++
	}
	u := an.usage(a, a.output, false)
	add(evFinal, anEvent{Type: "message_delta",
		Delta: anMessageDelta{StopReason: an.stopReason(a), StopSequence: nullable(a.stopSeq), StopDetails: an.stopDetails(a)},
		Usage: &u})
	add(evTerminal, anEvent{Type: "message_stop"})
	return evs
}

func (an anthropicMessages) errorEvent(c *call, e *apiError) []byte {
	return sse.AppendEvent(nil, "error", fmt.Appendf(nil, `{"type":"error","error":%s}`, an.errorObject(e)))
}

func (an anthropicMessages) malformedEvent(c *call) []byte {
	return []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"mal\n\n")
}
