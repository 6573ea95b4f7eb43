package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// openAIChat speaks OpenAI Chat Completions (wire-formats.md section 1).
type openAIChat struct{}

var _ wire = openAIChat{}

func (openAIChat) path() string              { return "/v1/chat/completions" }
func (openAIChat) streamContentType() string { return "text/event-stream; charset=utf-8" }
func (openAIChat) refusalDeltas() bool       { return true }
func (openAIChat) validate(*Script) error    { return nil }

func (o openAIChat) other(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	if o.serveEmbeddings(m, c, w, r) {
		return true
	}
	if r.URL.Path != "/v1/models" && !strings.HasPrefix(r.URL.Path, "/v1/models/") {
		return false
	}
	if r.Method != http.MethodGet {
		o.writeError(c, w, o.methodError(r))
		return true
	}
	if e := o.admit(c, r, m.opts.APIKey); e != nil {
		o.writeError(c, w, e)
		return true
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	mk := func(id string) model { return model{ID: id, Object: "model", Created: 1715367049, OwnedBy: "system"} }
	var v any
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok {
		v = mk(id)
	} else {
		ids := []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1"}
		if m.opts.Model != "" {
			ids = []string{m.opts.Model}
		}
		list := struct {
			Object string  `json:"object"`
			Data   []model `json:"data"`
		}{Object: "list"}
		for _, id := range ids {
			list.Data = append(list.Data, mk(id))
		}
		v = list
	}
	b := marshal(v)
	o.headers(c, w.Header(), http.StatusOK)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true
}

func (o openAIChat) admit(c *call, r *http.Request, apiKey string) *apiError {
	if apiKey == "" {
		return nil
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		return newAPIError(http.StatusUnauthorized, "invalid_request_error", "",
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.", "")
	}
	if key != apiKey {
		return newAPIError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided: "+maskKey(key)+". You can find your API key at https://platform.openai.com/account/api-keys.", "")
	}
	return nil
}

// maskKey shows a key the way OpenAI's 401 message does.
func maskKey(k string) string {
	if len(k) < 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

type oaRequest struct {
	Model               *string           `json:"model"`
	Messages            *[]oaMessage      `json:"messages"`
	Stream              *bool             `json:"stream"`
	StreamOptions       *oaStreamOptions  `json:"stream_options"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	MaxTokens           *int              `json:"max_tokens"`
	Stop                json.RawMessage   `json:"stop"`
	Tools               []oaTool          `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	ResponseFormat      *oaResponseFormat `json:"response_format"`
	ReasoningEffort     *string           `json:"reasoning_effort"`
}

// oaResponseFormat is response_format: text, json_object or json_schema.
type oaResponseFormat struct {
	Type       *string `json:"type"`
	JSONSchema *struct {
		Name   *string         `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

type oaStreamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

type oaMessage struct {
	Role *string `json:"role"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
	Custom *struct {
		Name string `json:"name"`
	} `json:"custom"`
}

// oaTypeName names a Go type the way OpenAI's type errors name JSON types.
func oaTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// oaValueName names what encoding/json found (UnmarshalTypeError.Value).
func oaValueName(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "string", "number":
		return "a " + kind
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + kind
	}
	return v
}

const oaParseError = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"

func (o openAIChat) decode(_ *call, body []byte) (*request, *apiError) {
	bad := func(msg, param, code string) (*request, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "invalid_request_error", code, msg, param)
	}
	var in oaRequest
	if err := json.Unmarshal(body, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return bad(fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", te.Field, oaTypeName(te.Type), oaValueName(te.Value)), te.Field, "invalid_type")
		}
		return bad(oaParseError, "", "")
	}
	if in.Model == nil || *in.Model == "" {
		return bad("you must provide a model parameter", "", "")
	}
	if in.Messages == nil {
		return bad("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
	}
	msgs := *in.Messages
	if len(msgs) == 0 {
		return bad("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array")
	}
	for i, mm := range msgs {
		param := fmt.Sprintf("messages[%d].role", i)
		if mm.Role == nil {
			return bad(fmt.Sprintf("Missing required parameter: '%s'.", param), param, "missing_required_parameter")
		}
		switch *mm.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return bad(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", *mm.Role), param, "invalid_value")
		}
	}
	req := &request{model: *in.Model, maxTokens: -1, toolChoice: "auto"}
	req.stream = in.Stream != nil && *in.Stream
	if e := in.ReasoningEffort; e != nil {
		switch *e {
		case "none":
		case "minimal", "low", "medium", "high", "xhigh", "max":
			// Reasoning happens and is billed, but Chat never shows it.
			req.thinking = thinkHidden
		default:
			return bad("Invalid value for 'reasoning_effort': '"+*e+"'.", "reasoning_effort", "invalid_value")
		}
	}
	if in.StreamOptions != nil && !req.stream {
		return bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", "")
	}
	if in.StreamOptions != nil && in.StreamOptions.IncludeUsage != nil {
		req.includeUsage = *in.StreamOptions.IncludeUsage
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_completion_tokens", in.MaxCompletionTokens}, {"max_tokens", in.MaxTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return bad(fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", f.name, *f.v), f.name, "integer_below_min_value")
		}
		if req.maxTokens < 0 {
			req.maxTokens = *f.v // max_completion_tokens wins over the deprecated max_tokens
		}
	}
	if len(in.Stop) > 0 && string(in.Stop) != "null" {
		var one string
		if json.Unmarshal(in.Stop, &one) == nil {
			req.stops = []string{one}
		} else if json.Unmarshal(in.Stop, &req.stops) != nil {
			return bad("Invalid type for 'stop': expected one of a string or an array of strings.", "stop", "invalid_type")
		}
	}
	for _, t := range in.Tools {
		switch {
		case t.Function != nil:
			req.tools = append(req.tools, t.Function.Name)
			req.setSchema(t.Function.Name, t.Function.Parameters)
		case t.Custom != nil:
			req.tools = append(req.tools, t.Custom.Name)
		}
	}
	if len(in.ToolChoice) > 0 && string(in.ToolChoice) != "null" {
		if len(in.Tools) == 0 {
			return bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice", "")
		}
		var mode string
		var forced struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(in.ToolChoice, &mode) == nil:
			if mode != "none" && mode != "auto" && mode != "required" {
				return bad(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'.", mode), "tool_choice", "invalid_value")
			}
			req.toolChoice = mode
		case json.Unmarshal(in.ToolChoice, &forced) == nil && forced.Function.Name != "":
			req.toolChoice, req.forcedTool = "tool", forced.Function.Name
		default:
			return bad("Invalid 'tool_choice': expected a string or an object naming a function.", "tool_choice", "invalid_type")
		}
	}
	req.noParallel = in.ParallelToolCalls != nil && !*in.ParallelToolCalls
	req.lastIsToolResult = *msgs[len(msgs)-1].Role == "tool"
	if rf := in.ResponseFormat; rf != nil {
		switch {
		case rf.Type == nil:
			return bad("Missing required parameter: 'response_format.type'.", "response_format.type", "missing_required_parameter")
		case *rf.Type == "text":
		case *rf.Type == "json_object":
			req.format = &jsonFormat{free: true}
		case *rf.Type == "json_schema":
			if rf.JSONSchema == nil {
				return bad("Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema", "missing_required_parameter")
			}
			if rf.JSONSchema.Name == nil {
				return bad("Missing required parameter: 'response_format.json_schema.name'.", "response_format.json_schema.name", "missing_required_parameter")
			}
			req.format = &jsonFormat{schema: rf.JSONSchema.Schema}
		default:
			return bad(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", *rf.Type), "response_format.type", "invalid_value")
		}
	}
	return req, nil
}

func (o openAIChat) statusError(c *call, status int, sc *Script) *apiError {
	org := c.id("org-", 24, 7)
	model := "gpt-4o"
	if c.req != nil {
		model = c.req.model
	}
	var e *apiError
	switch status {
	case 400:
		e = newAPIError(status, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.", "messages")
	case 401:
		e = newAPIError(status, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided: sk-proj-********************"+c.id("", 4, 9)+". You can find your API key at https://platform.openai.com/account/api-keys.", "")
	case 403:
		e = newAPIError(status, "request_forbidden", "unsupported_country_region_territory", "Country, region, or territory not supported", "")
	case 404:
		e = newAPIError(status, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "")
	case 413:
		e = newAPIError(status, "invalid_request_error", "request_too_large", "Request too large. The request body exceeds the maximum allowed size.", "")
	case 429:
		switch {
		case sc != nil && sc.errorCode == "insufficient_quota" || sc != nil && sc.errorType == "insufficient_quota":
			e = newAPIError(status, "insufficient_quota", "insufficient_quota",
				"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", "")
		case sc != nil && sc.errorType == "requests":
			e = newAPIError(status, "requests", "rate_limit_exceeded",
				fmt.Sprintf("Rate limit reached for %s in organization %s on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to learn more.", model, org), "")
		default:
			e = newAPIError(status, "tokens", "rate_limit_exceeded",
				fmt.Sprintf("Rate limit reached for %s in organization %s on tokens per min (TPM): Limit 30000, Used 29812, Requested 1250. Please try again in 2.124s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, org), "")
		}
	case 500:
		e = newAPIError(status, "server_error", "",
			"The server had an error while processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID "+o.requestID(c)+" in your message.)", "")
	case 502:
		e = newAPIError(status, "server_error", "", "Bad gateway.", "")
	case 503:
		e = newAPIError(status, "server_error", "", "The server is overloaded or not ready yet.", "")
	case 504:
		e = newAPIError(status, "server_error", "", "Gateway timeout.", "")
	default:
		if status >= 500 {
			e = newAPIError(status, "server_error", "", "The server is overloaded or not ready yet.", "")
		} else {
			e = newAPIError(status, "invalid_request_error", "", fmt.Sprintf("Request failed with status %d.", status), "")
		}
	}
	return e.override(sc)
}

func (o openAIChat) streamError(c *call, sc *Script) *apiError {
	e := newAPIError(http.StatusInternalServerError, "server_error", "",
		"The server had an error while processing your request. Sorry about that!", "")
	return e.override(sc)
}

func (o openAIChat) badRequest(c *call, msg string) *apiError {
	return newAPIError(http.StatusBadRequest, "invalid_request_error", "", msg, "")
}

func (o openAIChat) notFound(r *http.Request) *apiError {
	return newAPIError(http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "")
}

func (o openAIChat) methodError(r *http.Request) *apiError {
	return newAPIError(http.StatusMethodNotAllowed, "invalid_request_error", "", fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path), "")
}

func (o openAIChat) errorJSON(e *apiError) []byte {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := marshal(struct {
		Error body `json:"error"`
	}{body{e.message, e.typ, nullable(e.param), nullable(e.code)}})
	return b
}

func (o openAIChat) writeError(c *call, w http.ResponseWriter, e *apiError) {
	h := w.Header()
	o.headers(c, h, e.status)
	setRetryHeaders(h, e)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(append(o.errorJSON(e), '\n'))
}

func (o openAIChat) requestID(c *call) string { return c.hexID("req_", 32, 1) }

func (o openAIChat) headers(c *call, h http.Header, status int) {
	h.Set("x-request-id", o.requestID(c))
	h.Set("openai-processing-ms", strconv.FormatInt(c.elapsedMS(), 10))
	h.Set("openai-version", "2020-10-01")
	h.Set("openai-organization", "spillway-mock")
	remReq, remTok := "9999", "29998750"
	if status == http.StatusTooManyRequests {
		remReq, remTok = "0", "0"
	}
	h.Set("x-ratelimit-limit-requests", "10000")
	h.Set("x-ratelimit-limit-tokens", "30000000")
	h.Set("x-ratelimit-remaining-requests", remReq)
	h.Set("x-ratelimit-remaining-tokens", remTok)
	h.Set("x-ratelimit-reset-requests", "6ms")
	h.Set("x-ratelimit-reset-tokens", "2ms")
}

// oaIDs are the per-answer ids shared by a non-streaming body and its chunks.
func (o openAIChat) completionID(c *call) string { return c.id("chatcmpl-", 29, 2) }
func (o openAIChat) fingerprint(c *call) string  { return c.hexID("fp_", 10, 3) }
func (o openAIChat) callID(c *call, i int) string {
	return c.id("call_", 24, 100+uint64(i))
}

func (o openAIChat) finishReason(a *answer) string {
	switch a.stop {
	case stopLength:
		return "length"
	case stopTool:
		return "tool_calls"
	}
	return "stop" // natural end, stop sequence and (as seen in practice) refusal
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func (o openAIChat) usage(a *answer) oaUsage {
	u := oaUsage{PromptTokens: a.input, CompletionTokens: a.output, TotalTokens: a.input + a.output}
	u.PromptTokensDetails.CachedTokens = a.cached
	u.CompletionTokensDetails.ReasoningTokens = len(a.thought)
	return u
}

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

func (o openAIChat) body(c *call, a *answer) []byte {
	type message struct {
		Role        string       `json:"role"`
		Content     *string      `json:"content"`
		Refusal     *string      `json:"refusal"`
		ToolCalls   []oaToolCall `json:"tool_calls,omitempty"`
		Annotations []struct{}   `json:"annotations"`
	}
	type choice struct {
		Index        int       `json:"index"`
		Message      message   `json:"message"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
	}
	msg := message{Role: "assistant", Annotations: []struct{}{}}
	if len(a.refusal) > 0 {
		msg.Refusal = nullable(strings.Join(a.refusal, ""))
	} else if len(a.calls) == 0 {
		s := strings.Join(a.text, "")
		msg.Content = &s
	}
	for i, tc := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, oaToolCall{ID: o.callID(c, i), Type: "function", Function: oaFunction{tc.name, tc.args}})
	}
	b := marshal(struct {
		ID                string   `json:"id"`
		Object            string   `json:"object"`
		Created           int64    `json:"created"`
		Model             string   `json:"model"`
		Choices           []choice `json:"choices"`
		Usage             oaUsage  `json:"usage"`
		ServiceTier       string   `json:"service_tier"`
		SystemFingerprint string   `json:"system_fingerprint"`
	}{
		ID: o.completionID(c), Object: "chat.completion", Created: c.start.Unix(), Model: a.model,
		Choices:     []choice{{Message: msg, FinishReason: o.finishReason(a)}},
		Usage:       o.usage(a),
		ServiceTier: "default", SystemFingerprint: o.fingerprint(c),
	})
	return b
}

// chunker renders chat.completion.chunk events that share one id, created
// time and model.
type chunker struct {
	head         []byte // `data: {"id":...,"choices":`
	includeUsage bool
}

func (o openAIChat) chunker(c *call, model string, includeUsage bool) *chunker {
	head := fmt.Appendf(nil, `data: {"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"service_tier":"default","system_fingerprint":%s,"choices":`,
		jsonText(o.completionID(c)), c.start.Unix(), jsonText(model), jsonText(o.fingerprint(c)))
	return &chunker{head: head, includeUsage: includeUsage}
}

// delta renders one choice chunk; finish is "" while the answer goes on.
func (k *chunker) delta(delta string, finish string) []byte {
	b := append([]byte(nil), k.head...)
	b = append(b, `[{"index":0,"delta":`...)
	b = append(b, delta...)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, jsonText(finish)...)
	}
	b = append(b, "}]"...)
	if k.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func (o openAIChat) events(c *call, a *answer) []event {
	k := o.chunker(c, a.model, c.req.includeUsage)
	var evs []event
	add := func(kind eventKind, b []byte) { evs = append(evs, event{kind, b}) }
	for i, tc := range a.calls {
		start := fmt.Sprintf(`{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}`, i, jsonText(o.callID(c, i)), jsonText(tc.name))
		if i == 0 {
			add(evProtocol, k.delta(`{"role":"assistant","content":null,"tool_calls":[`+start+`],"refusal":null}`, ""))
		} else {
			add(evProtocol, k.delta(`{"tool_calls":[`+start+`]}`, ""))
		}
		for _, frag := range tc.fragments {
			add(evContent, k.delta(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, jsonText(frag)), ""))
		}
	}
	if len(a.calls) == 0 {
		add(evProtocol, k.delta(`{"role":"assistant","content":"","refusal":null}`, ""))
	}
	for _, t := range a.text {
		add(evContent, k.delta(`{"content":`+jsonText(t)+`}`, ""))
	}
	for _, t := range a.refusal {
		add(evContent, k.delta(`{"refusal":`+jsonText(t)+`}`, ""))
	}
	add(evFinal, k.delta(`{}`, o.finishReason(a)))
	if c.req.includeUsage {
		u := marshal(o.usage(a))
		b := append([]byte(nil), k.head...)
		b = append(b, `[],"usage":`...)
		b = append(b, u...)
		add(evFinal, append(b, "}\n\n"...))
	}
	add(evTerminal, []byte("data: [DONE]\n\n"))
	return evs
}

func (o openAIChat) errorEvent(c *call, e *apiError) []byte {
	return append(append([]byte("data: "), o.errorJSON(e)...), "\n\n"...)
}

func (o openAIChat) malformedEvent(c *call) []byte {
	model := ""
	if c.req != nil {
		model = c.req.model
	}
	k := o.chunker(c, model, false)
	return append(k.head, `[{"index":0,"delta":{"content":"mal`+"\n\n"...)
}
