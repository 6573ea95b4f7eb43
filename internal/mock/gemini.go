package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// geminiAPI speaks the Gemini API's generateContent and
// streamGenerateContent (wire-formats.md section 5), as go-genai reads it.
//
// Routes: POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse (also under /v1); the model and the
// streaming mode come from the path. The key is accepted from
// x-goog-api-key or ?key=.
//
// Streams: one JSON object per "data:" line, a blank line after each, no
// terminator. Every chunk carries responseId and modelVersion; each text
// delta (at most 4 bytes) and each whole function call is one chunk with
// partial usageMetadata (prompt and total only); a last chunk carries the
// finishReason (with an empty text part, as Gemini sends it) and the full
// usage. no_terminal drops that last chunk, so the stream ends without a
// finishReason: Gemini's only sign of a cut answer.
//
// Accounting: candidatesTokenCount is the number of content deltas, where
// a function call counts once (Gemini sends calls whole, not as argument
// fragments), streamed or not. promptTokenCount includes the cached tokens
// (cachedContentTokenCount).
//
// Errors are Google RPC bodies {"error":{code,message,status,details}},
// pretty-printed as Google sends them. status=N answers with Gemini's own
// rendering of N: 402 becomes 400 FAILED_PRECONDITION (the free tier needs
// billing: Gemini has no payment status), 413 becomes 400 INVALID_ARGUMENT
// (payload size), 529 becomes 503 UNAVAILABLE ("The model is overloaded").
// error_type= sets the canonical status, error_code= the ErrorInfo reason,
// retry_after=S (or retry_after_ms=N) a google.rpc.RetryInfo retryDelay of
// "Ss" ("N/1000 s"); no Retry-After header is sent, as Gemini sends none.
// A bad key is 400 INVALID_ARGUMENT with ErrorInfo reason API_KEY_INVALID;
// a missing one is 403 PERMISSION_DENIED. error_after sends the error as a
// block that is not "data:" (a bare error object), which go-genai turns
// into an APIError; a non-streaming request gets 500 INTERNAL instead.
// refusal ends with finishReason SAFETY, blocked safetyRatings and no
// content (text first when tokens= is given).
type geminiAPI struct{}

var _ wire = geminiAPI{}

func (geminiAPI) path() string              { return "" } // routes carry the model: see other
func (geminiAPI) streamContentType() string { return "text/event-stream" }
func (geminiAPI) refusalDeltas() bool       { return false }
func (geminiAPI) validate(*Script) error    { return nil }

// geminiRoute splits /v1beta/models/{model}:generateContent and
// :streamGenerateContent.
func geminiRoute(path string) (model string, stream, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1beta/models/")
	if !found {
		if rest, found = strings.CutPrefix(path, "/v1/models/"); !found {
			return "", false, false
		}
	}
	model, method, found := strings.Cut(rest, ":")
	if !found || model == "" || strings.Contains(model, "/") {
		return "", false, false
	}
	switch method {
	case "generateContent":
	case "streamGenerateContent":
		stream = true
	default:
		return "", false, false
	}
	return model, stream, true
}

func (g geminiAPI) other(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	if g.serveEmbeddings(m, c, w, r) {
		return true
	}
	model, stream, ok := geminiRoute(r.URL.Path)
	if !ok {
		return false
	}
	if r.Method != http.MethodPost {
		g.writeError(c, w, g.methodError(r))
		return true
	}
	// The path, not the body, names the model and says whether to stream.
	c.stream, c.routeModel = stream, model
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	m.generate(c, w, r)
	return true
}

func (g geminiAPI) admit(c *call, r *http.Request, apiKey string) *apiError {
	if c.stream && r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse Gemini streams one JSON array; go-genai never asks
		// for it and the mock does not serve it.
		return g.badRequest(c, "mock: streamGenerateContent is served with alt=sse only")
	}
	if apiKey == "" {
		return nil
	}
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case key == "":
		return newAPIError(http.StatusForbidden, "PERMISSION_DENIED", "",
			"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", "")
	case key != apiKey:
		return newAPIError(http.StatusBadRequest, "INVALID_ARGUMENT", "API_KEY_INVALID", "API key not valid. Please pass a valid API key.", "")
	}
	return nil
}

// gmKnown are the GenerateContentRequest members (go-genai's Gemini API
// converter writes no others); Gemini rejects unknown names.
var gmKnown = map[string]bool{
	"contents": true, "systemInstruction": true, "tools": true, "toolConfig": true, "safetySettings": true,
	"generationConfig": true, "cachedContent": true, "serviceTier": true, "store": true, "labels": true,
	"continuationToken": true,
}

// gmGenKnown are the GenerationConfig members.
var gmGenKnown = map[string]bool{
	"audioTranscriptionConfig": true, "candidateCount": true, "enableEnhancedCivicAnswers": true,
	"frequencyPenalty": true, "imageConfig": true, "logprobs": true, "maxOutputTokens": true,
	"mediaResolution": true, "presencePenalty": true, "responseJsonSchema": true, "responseLogprobs": true,
	"responseMimeType": true, "responseModalities": true, "responseSchema": true, "seed": true,
	"speechConfig": true, "stopSequences": true, "temperature": true, "thinkingConfig": true,
	"topK": true, "topP": true,
}

type gmRequest struct {
	Contents *[]struct {
		Role  string                       `json:"role"`
		Parts []map[string]json.RawMessage `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig *struct {
		MaxOutputTokens    *int            `json:"maxOutputTokens"`
		StopSequences      []string        `json:"stopSequences"`
		CandidateCount     *int            `json:"candidateCount"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ThinkingConfig     *struct {
			IncludeThoughts bool    `json:"includeThoughts"`
			ThinkingBudget  *int    `json:"thinkingBudget"`
			ThinkingLevel   *string `json:"thinkingLevel"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

// gmPartData are the members of Part's data oneof.
var gmPartData = []string{"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"}

func (g geminiAPI) decode(_ *call, body []byte) (*request, *apiError) {
	bad := func(field, format string, args ...any) (*request, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "INVALID_ARGUMENT", "", fmt.Sprintf(format, args...), field)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return bad("", "Invalid JSON payload received. Unexpected token.")
	}
	for _, k := range sortedKeys(top) {
		if !gmKnown[k] {
			return bad(k, "Invalid JSON payload received. Unknown name %q: Cannot find field.", k)
		}
	}
	if raw, ok := top["generationConfig"]; ok {
		var gen map[string]json.RawMessage
		if json.Unmarshal(raw, &gen) == nil {
			for _, k := range sortedKeys(gen) {
				if !gmGenKnown[k] {
					return bad("generation_config", "Invalid JSON payload received. Unknown name %q at 'generation_config': Cannot find field.", k)
				}
			}
		}
	}
	var in gmRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return bad("", "Invalid JSON payload received. %s", err)
	}
	if in.Contents == nil || len(*in.Contents) == 0 {
		return bad("contents", "* GenerateContentRequest.contents: contents is not specified\n")
	}
	contents := *in.Contents
	calls := -1 // function calls of the turn before, -1 when it was not a model turn
	for i, ct := range contents {
		if ct.Role != "" && ct.Role != "user" && ct.Role != "model" {
			return bad("contents", "Please use a valid role: user, model.")
		}
		if len(ct.Parts) == 0 {
			return bad("contents", "* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)
		}
		nCalls, nResp := 0, 0
		for j, p := range ct.Parts {
			data := 0
			for _, k := range gmPartData {
				if _, ok := p[k]; ok {
					data++
				}
			}
			if data != 1 {
				return bad("contents", "* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field\n", i, j)
			}
			if _, ok := p["functionCall"]; ok {
				nCalls++
			}
			if _, ok := p["functionResponse"]; ok {
				nResp++
			}
			// A thought sent back must carry the signature it was given.
			var thought bool
			if raw, ok := p["thought"]; ok && json.Unmarshal(raw, &thought) == nil && thought {
				var text, sig string
				_ = json.Unmarshal(p["text"], &text)
				_ = json.Unmarshal(p["thoughtSignature"], &sig)
				if !validThought(text, sig) {
					return bad("contents", "* GenerateContentRequest.contents[%d].parts[%d]: Thought signature is not valid.\n", i, j)
				}
			}
		}
		if nResp > 0 && nResp != calls {
			return bad("contents", "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		}
		calls = -1
		if ct.Role == "model" {
			calls = nCalls
		}
	}
	req := &request{maxTokens: -1, toolChoice: "auto"}
	if gc := in.GenerationConfig; gc != nil {
		if gc.MaxOutputTokens != nil {
			if *gc.MaxOutputTokens < 0 {
				return bad("generation_config.max_output_tokens", "* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.\n")
			}
			req.maxTokens = *gc.MaxOutputTokens
		}
		if gc.CandidateCount != nil && *gc.CandidateCount > 1 {
			return bad("generation_config.candidate_count", "mock: candidateCount above 1 is not served")
		}
		req.stops = gc.StopSequences
		req.format = gmFormat(gc.ResponseMimeType, gc.ResponseJSONSchema, gc.ResponseSchema)
		if tc := gc.ThinkingConfig; tc != nil && !(tc.ThinkingBudget != nil && *tc.ThinkingBudget == 0) {
			// Thoughts are counted whether or not they are included.
			req.thinking = thinkHidden
			if tc.IncludeThoughts {
				req.thinking = thinkShown
			}
		}
	}
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			req.tools = append(req.tools, f.Name)
			if len(f.ParametersJSONSchema) > 0 {
				req.setSchema(f.Name, f.ParametersJSONSchema)
			} else {
				req.setSchema(f.Name, f.Parameters)
			}
		}
	}
	if tc := in.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		switch fc.Mode {
		case "", "MODE_UNSPECIFIED", "AUTO":
		case "NONE":
			req.toolChoice = "none"
		case "ANY", "VALIDATED":
			req.toolChoice = "required"
			if len(fc.AllowedFunctionNames) == 1 {
				req.toolChoice, req.forcedTool = "tool", fc.AllowedFunctionNames[0]
			}
		default:
			return bad("tool_config.function_calling_config.mode", "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), %q", fc.Mode)
		}
	}
	last := contents[len(contents)-1]
	for _, p := range last.Parts {
		if _, ok := p["functionResponse"]; ok {
			req.lastIsToolResult = true
		}
	}
	return req, nil
}

// gmFormat is the structured output a generationConfig asks for:
// application/json follows responseJsonSchema (JSON Schema), else
// responseSchema (the OpenAPI subset, types in upper case), else any JSON
// object; text/x.enum with a schema answers the bare enum value. Any other
// mime type (or none) answers text, schema or not, as Gemini does.
func gmFormat(mime string, jsonSchema, schema json.RawMessage) *jsonFormat {
	given := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	pick := schema
	if given(jsonSchema) {
		pick = jsonSchema
	}
	mime, _, _ = strings.Cut(mime, ";")
	switch strings.ToLower(strings.TrimSpace(mime)) {
	case "application/json":
		if !given(pick) {
			return &jsonFormat{free: true}
		}
		return &jsonFormat{schema: pick}
	case "text/x.enum":
		if given(pick) {
			return &jsonFormat{schema: pick, enumText: true}
		}
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// gmStatus maps HTTP statuses to Google's canonical codes (wire-formats.md
// 5.4) and back.
var gmStatus = []struct {
	status int
	code   string
}{
	{400, "INVALID_ARGUMENT"}, {401, "UNAUTHENTICATED"}, {403, "PERMISSION_DENIED"}, {404, "NOT_FOUND"},
	{409, "ABORTED"}, {429, "RESOURCE_EXHAUSTED"}, {499, "CANCELLED"}, {500, "INTERNAL"},
	{501, "UNIMPLEMENTED"}, {503, "UNAVAILABLE"}, {504, "DEADLINE_EXCEEDED"},
}

func gmCodeOf(status int) string {
	for _, s := range gmStatus {
		if s.status == status {
			return s.code
		}
	}
	if status >= 500 {
		return "UNKNOWN"
	}
	return "INVALID_ARGUMENT"
}

func gmStatusOf(code string) int {
	for _, s := range gmStatus {
		if s.code == code {
			return s.status
		}
	}
	switch code {
	case "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return http.StatusBadRequest
	case "ALREADY_EXISTS":
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// routeModelOf is the model the request named, for messages.
func (g geminiAPI) routeModelOf(c *call) string {
	if c.routeModel != "" {
		return c.routeModel
	}
	return "gemini-2.5-flash"
}

func (g geminiAPI) statusError(c *call, status int, sc *Script) *apiError {
	model := g.routeModelOf(c)
	e := newAPIError(status, gmCodeOf(status), "", http.StatusText(status), "")
	switch status {
	case 400:
		e.message = "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576)."
	case 401:
		e.code = "CREDENTIALS_MISSING"
		e.message = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	case 402:
		e.status, e.typ = 400, "FAILED_PRECONDITION"
		e.message = "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio."
	case 403:
		project := g.projectNumber(c)
		e.code = "SERVICE_DISABLED"
		e.message = "Generative Language API has not been used in project " + project + " before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/generativelanguage.googleapis.com/overview?project=" + project + " then retry. If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry."
	case 404:
		e.message = "models/" + model + " is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
	case 413:
		e.status, e.typ = 400, "INVALID_ARGUMENT"
		e.message = "Request payload size exceeds the limit: 20971520 bytes."
	case 429:
		e.message = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: " + model
	case 500:
		e.message = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case 503, 529:
		e.status, e.typ = 503, "UNAVAILABLE"
		e.message = "The model is overloaded. Please try again later."
	case 504:
		e.message = "Deadline expired before operation could complete."
	}
	if e.message == "" {
		e.message = "Error " + strconv.Itoa(status)
	}
	return e.override(sc)
}

func (g geminiAPI) streamError(c *call, sc *Script) *apiError {
	e := newAPIError(http.StatusInternalServerError, "INTERNAL", "",
		"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", "").override(sc)
	e.status = gmStatusOf(e.typ) // the status the error stands for
	return e
}

func (g geminiAPI) badRequest(c *call, msg string) *apiError {
	return newAPIError(http.StatusBadRequest, "INVALID_ARGUMENT", "", msg, "")
}

func (g geminiAPI) notFound(r *http.Request) *apiError {
	return newAPIError(http.StatusNotFound, "NOT_FOUND", "", "Requested entity was not found.", "")
}

// methodError: Google answers a method a path does not have with 404.
func (g geminiAPI) methodError(r *http.Request) *apiError {
	return g.notFound(r)
}

// gmDetail is one google.rpc detail; @type comes first, as Google writes it.
type gmDetail map[string]any

// errorJSON renders a Google RPC error body, pretty-printed with two
// spaces as Google sends it (go-genai reads it either way).
func (g geminiAPI) errorJSON(c *call, e *apiError) []byte {
	var details []gmDetail
	if e.code != "" {
		details = append(details, gmDetail{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": e.code, "domain": "googleapis.com",
			"metadata": map[string]string{"service": "generativelanguage.googleapis.com"},
		})
		if e.code == "API_KEY_INVALID" {
			details = append(details, gmDetail{"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": e.message})
		}
	}
	if e.param != "" {
		details = append(details, gmDetail{"@type": "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []map[string]string{{"field": e.param, "description": e.message}}})
	}
	if e.typ == "RESOURCE_EXHAUSTED" {
		model := g.routeModelOf(c)
		details = append(details,
			gmDetail{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []map[string]any{{
				"quotaMetric":     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":         "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				"quotaDimensions": map[string]string{"location": "global", "model": model},
				"quotaValue":      "10",
			}}},
			gmDetail{"@type": "type.googleapis.com/google.rpc.Help", "links": []map[string]string{{
				"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
			}}})
	}
	if d := retryDelay(e); d != "" {
		details = append(details, gmDetail{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": d})
	}
	type rpcErr struct {
		Code    int        `json:"code"`
		Message string     `json:"message"`
		Status  string     `json:"status"`
		Details []gmDetail `json:"details,omitempty"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Error rpcErr `json:"error"`
	}{rpcErr{e.status, e.message, e.typ, details}}); err != nil {
		panic("mock: cannot encode " + err.Error()) // fixed, encodable types only
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// retryDelay renders the script's retry hint as a protobuf Duration:
// retry_after_ms=3950 → "3.95s", retry_after=36 → "36s"; "" when none.
func retryDelay(e *apiError) string {
	if e.retryMS >= 0 {
		s := strconv.Itoa(e.retryMS / 1000)
		if ms := e.retryMS % 1000; ms != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%03d", ms), "0")
		}
		return s + "s"
	}
	if e.retryAfter >= 0 {
		return strconv.Itoa(e.retryAfter) + "s"
	}
	return ""
}

func (g geminiAPI) writeError(c *call, w http.ResponseWriter, e *apiError) {
	h := w.Header()
	g.headers(c, h, e.status)
	h.Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.status)
	w.Write(append(g.errorJSON(c, e), '\n'))
}

// projectNumber is a deterministic 12-digit Google Cloud project number.
func (g geminiAPI) projectNumber(c *call) string {
	s := []byte(c.id("", 12, 9))
	for i, ch := range s {
		s[i] = '0' + ch%10
	}
	if s[0] == '0' {
		s[0] = '4'
	}
	return string(s)
}

func (g geminiAPI) headers(c *call, h http.Header, status int) {
	h.Set("Vary", "Origin")
	h.Add("Vary", "X-Origin")
	h.Add("Vary", "Referer")
	h.Set("Server", "scaffolding on HTTPServer2")
	h.Set("X-XSS-Protection", "0")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Server-Timing", "gfet4t7; dur="+strconv.FormatInt(c.elapsedMS(), 10))
	if c.stream && status == http.StatusOK {
		h.Set("Content-Disposition", "attachment")
	}
}

func (g geminiAPI) responseID(c *call) string { return c.id("", 23, 3) }

func (g geminiAPI) finishReason(a *answer) string {
	switch a.stop {
	case stopLength:
		return "MAX_TOKENS"
	case stopRefusal:
		return "SAFETY"
	}
	// Stop sequences and function calls end with STOP: Gemini has no
	// reason of its own for either.
	return "STOP"
}

type gmFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gmPart struct {
	Text             *string         `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
	FunctionCall     *gmFunctionCall `json:"functionCall,omitempty"`
}

type gmContent struct {
	Parts []gmPart `json:"parts"`
	Role  string   `json:"role"`
}

type gmSafetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked,omitempty"`
}

type gmCandidate struct {
	Content       *gmContent       `json:"content,omitempty"`
	FinishReason  string           `json:"finishReason,omitempty"`
	Index         int              `json:"index"`
	SafetyRatings []gmSafetyRating `json:"safetyRatings,omitempty"`
}

type gmModality struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

type gmUsage struct {
	PromptTokenCount        int          `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    int          `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int          `json:"totalTokenCount,omitempty"`
	CachedContentTokenCount int          `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int          `json:"thoughtsTokenCount,omitempty"`
	PromptTokensDetails     []gmModality `json:"promptTokensDetails,omitempty"`
	CacheTokensDetails      []gmModality `json:"cacheTokensDetails,omitempty"`
}

type gmResponse struct {
	Candidates    []gmCandidate `json:"candidates"`
	UsageMetadata *gmUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string        `json:"modelVersion"`
	ResponseID    string        `json:"responseId"`
}

// output counts content deltas, each function call once.
func (g geminiAPI) output(a *answer) int { return len(a.text) + len(a.refusal) + len(a.calls) }

// usage is the answer's usageMetadata; partial (prompt and total only) on
// the chunks before the last.
func (g geminiAPI) usage(a *answer, full bool) *gmUsage {
	u := &gmUsage{PromptTokenCount: a.input, TotalTokenCount: a.input, CachedContentTokenCount: a.cached}
	if a.input > 0 {
		u.PromptTokensDetails = []gmModality{{"TEXT", a.input}}
	}
	if !full {
		return u
	}
	out := g.output(a)
	// Thoughts are counted apart from the candidates, and in the total.
	u.CandidatesTokenCount, u.ThoughtsTokenCount, u.TotalTokenCount = out, len(a.thought), a.input+out+len(a.thought)
	if a.cached > 0 {
		u.CacheTokensDetails = []gmModality{{"TEXT", a.cached}}
	}
	return u
}

func (g geminiAPI) modelVersion(c *call, a *answer) string {
	if a.model != "" {
		return a.model
	}
	return g.routeModelOf(c)
}

// blockedRatings are the safetyRatings of a SAFETY stop.
var blockedRatings = []gmSafetyRating{
	{"HARM_CATEGORY_SEXUALLY_EXPLICIT", "NEGLIGIBLE", false},
	{"HARM_CATEGORY_HATE_SPEECH", "NEGLIGIBLE", false},
	{"HARM_CATEGORY_HARASSMENT", "NEGLIGIBLE", false},
	{"HARM_CATEGORY_DANGEROUS_CONTENT", "HIGH", true},
}

// finalCandidate is the candidate of the last chunk (or of a whole body
// without content).
func (g geminiAPI) finalCandidate(a *answer, content *gmContent) gmCandidate {
	cand := gmCandidate{Content: content, FinishReason: g.finishReason(a)}
	if a.stop == stopRefusal {
		cand.SafetyRatings = blockedRatings
	}
	return cand
}

func (g geminiAPI) body(c *call, a *answer) []byte {
	var parts []gmPart
	if len(a.thought) > 0 && !a.thoughtHide {
		s := strings.Join(a.thought, "")
		parts = append(parts, gmPart{Text: &s, Thought: true, ThoughtSignature: a.signature})
	}
	if len(a.text) > 0 {
		s := strings.Join(a.text, "")
		parts = append(parts, gmPart{Text: &s})
	}
	for _, tc := range a.calls {
		parts = append(parts, gmPart{FunctionCall: &gmFunctionCall{tc.name, json.RawMessage(tc.args)}})
	}
	var content *gmContent
	if len(parts) > 0 {
		content = &gmContent{Parts: parts, Role: "model"}
	}
	return marshal(gmResponse{
		Candidates:    []gmCandidate{g.finalCandidate(a, content)},
		UsageMetadata: g.usage(a, true),
		ModelVersion:  g.modelVersion(c, a),
		ResponseID:    g.responseID(c),
	})
}

func (g geminiAPI) events(c *call, a *answer) []event {
	var evs []event
	model, id := g.modelVersion(c, a), g.responseID(c)
	partial := g.usage(a, false)
	add := func(kind eventKind, cand gmCandidate, u *gmUsage) {
		b := append([]byte("data: "), marshal(gmResponse{Candidates: []gmCandidate{cand}, UsageMetadata: u, ModelVersion: model, ResponseID: id})...)
		evs = append(evs, event{kind, append(b, '\n', '\n')})
	}
	if !a.thoughtHide {
		// Thought summaries stream as thought parts; the signature rides on
		// the last one.
		for i, t := range a.thought {
			p := gmPart{Text: &t, Thought: true}
			if i == len(a.thought)-1 {
				p.ThoughtSignature = a.signature
			}
			add(evContent, gmCandidate{Content: &gmContent{Parts: []gmPart{p}, Role: "model"}}, partial)
		}
	}
	for _, t := range a.text {
		add(evContent, gmCandidate{Content: &gmContent{Parts: []gmPart{{Text: &t}}, Role: "model"}}, partial)
	}
	for _, tc := range a.calls {
		call := &gmFunctionCall{tc.name, json.RawMessage(tc.args)}
		add(evContent, gmCandidate{Content: &gmContent{Parts: []gmPart{{FunctionCall: call}}, Role: "model"}}, partial)
	}
	var content *gmContent
	if a.stop != stopRefusal {
		empty := ""
		content = &gmContent{Parts: []gmPart{{Text: &empty}}, Role: "model"}
	}
	// The last chunk is the only sign of a complete answer: no_terminal
	// drops it.
	add(evTerminal, g.finalCandidate(a, content), g.usage(a, true))
	return evs
}

// errorEvent is the in-stream error: a block that is not "data:", holding
// the error object as the HTTP error body would.
func (g geminiAPI) errorEvent(c *call, e *apiError) []byte {
	return append(g.errorJSON(c, e), '\n', '\n')
}

func (g geminiAPI) malformedEvent(c *call) []byte {
	return []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"mal\n\n")
}
