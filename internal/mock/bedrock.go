package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"
)

// bedrockConverse speaks AWS Bedrock Converse and ConverseStream
// (wire-formats.md section 4): JSON answers, binary event-stream streams.
//
// Bedrock specifics of the fault menu: status=N answers the modelled
// exception for N (400 ValidationException, 403 AccessDeniedException, 404
// ResourceNotFoundException, 408 ModelTimeoutException, 424
// ModelErrorException, 429 ThrottlingException, 500
// InternalServerException, 503 ServiceUnavailableException); 529 has no
// Bedrock equivalent and answers 503 ServiceUnavailableException; other
// statuses keep N with ValidationException (4xx) or InternalServerException
// (5xx). error_after sends an in-stream serviceUnavailableException
// (error_type= picks another, e.g. throttlingException); no_terminal drops
// the closing metadata event (messageStop still comes: the answer looks
// whole but its usage never arrives); malformed_after sends a frame whose
// message CRC is wrong; refusal ends with stopReason guardrail_intervened
// and no content. Every stream event carries a "p" padding field, as real
// streams do. Usage reports cached=N as cacheReadInputTokens apart from
// inputTokens, as for Anthropic.
type bedrockConverse struct{}

var _ wire = bedrockConverse{}

// path is never a request's path: Bedrock's routes carry the model id, so
// other serves them.
func (bedrockConverse) path() string              { return "" }
func (bedrockConverse) streamContentType() string { return "application/vnd.amazon.eventstream" }
func (bedrockConverse) refusalDeltas() bool       { return false }

// bedrockRoute splits an escaped path /model/{modelId}/converse[-stream].
// The model id is one percent-encoded label: an inference-profile ARN's
// '/' arrives as %2F, so a raw '/' inside it is another route.
func bedrockRoute(escaped string) (model string, stream, ok bool) {
	rest, found := strings.CutPrefix(escaped, "/model/")
	if !found {
		return "", false, false
	}
	label, op, found := strings.Cut(rest, "/")
	if !found || label == "" {
		return "", false, false
	}
	switch op {
	case "converse":
	case "converse-stream":
		stream = true
	default:
		return "", false, false
	}
	model, err := url.PathUnescape(label)
	if err != nil {
		return "", false, false
	}
	return model, stream, true
}

func (b bedrockConverse) other(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	if b.serveEmbeddings(m, c, w, r) {
		return true
	}
	_, stream, ok := bedrockRoute(r.URL.EscapedPath())
	if !ok {
		return false
	}
	if r.Method != http.MethodPost {
		b.writeError(c, w, b.methodError(r))
		return true
	}
	// The endpoint, not the body, says whether the answer streams.
	c.stream = stream
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	m.generate(c, w, r)
	return true
}

func (bedrockConverse) validate(sc *Script) error {
	if sc.errorCode != "" {
		return errors.New("bedrock errors have no code; use error_type=")
	}
	return nil
}

// admit accepts a Bedrock API key (Bearer) or any SigV4 Authorization
// header; signatures are not checked.
func (b bedrockConverse) admit(c *call, r *http.Request, apiKey string) *apiError {
	if apiKey == "" {
		return nil
	}
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		return newAPIError(http.StatusForbidden, "MissingAuthenticationTokenException", "", "Missing Authentication Token", "")
	case strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") && strings.Contains(auth, "Credential="):
		return nil
	case auth == "Bearer "+apiKey:
		return nil
	}
	return newAPIError(http.StatusForbidden, "UnrecognizedClientException", "", "The security token included in the request is invalid.", "")
}

type brRequest struct {
	// AdditionalModelRequestFields reach the model untouched; Claude reads
	// its thinking setting there.
	AdditionalModelRequestFields *struct {
		Thinking *anThinking `json:"thinking"`
	} `json:"additionalModelRequestFields"`
	Messages        *[]brMessage `json:"messages"`
	InferenceConfig *struct {
		MaxTokens     *int     `json:"maxTokens"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string `json:"name"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice *struct {
			Auto *struct{} `json:"auto"`
			Any  *struct{} `json:"any"`
			Tool *struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
	OutputConfig *struct {
		TextFormat *struct {
			Type      *string `json:"type"`
			Structure *struct {
				JSONSchema *struct {
					// Schema is the JSON Schema as a string of JSON.
					Schema *string `json:"schema"`
				} `json:"jsonSchema"`
			} `json:"structure"`
		} `json:"textFormat"`
	} `json:"outputConfig"`
}

type brMessage struct {
	Role    string                       `json:"role"`
	Content []map[string]json.RawMessage `json:"content"`
}

func (b bedrockConverse) decode(_ *call, body []byte) (*request, *apiError) {
	bad := func(format string, args ...any) (*request, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "ValidationException", "", fmt.Sprintf(format, args...), "")
	}
	var in brRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return bad("Malformed input request, please reformat your input and try again.")
	}
	if in.Messages == nil {
		return bad("1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null")
	}
	msgs := *in.Messages
	if len(msgs) == 0 || msgs[0].Role != "user" {
		return bad("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	toolBlocks := false
	for i, mm := range msgs {
		if mm.Role != "user" && mm.Role != "assistant" {
			return bad("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", mm.Role, i+1)
		}
		if i > 0 && mm.Role == msgs[i-1].Role {
			return bad("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		if len(mm.Content) == 0 {
			return bad("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		for j, block := range mm.Content {
			if len(block) != 1 {
				return bad("The ContentBlock object at messages.%d.content.%d must set exactly one of its members.", i, j)
			}
			if t, ok := block["text"]; ok {
				var s string
				if json.Unmarshal(t, &s) != nil || strings.TrimSpace(s) == "" {
					return bad("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
				}
			}
			_, use := block["toolUse"]
			_, result := block["toolResult"]
			toolBlocks = toolBlocks || use || result
			if rc, ok := block["reasoningContent"]; ok {
				var r struct {
					ReasoningText *struct {
						Text      string `json:"text"`
						Signature string `json:"signature"`
					} `json:"reasoningText"`
				}
				if json.Unmarshal(rc, &r) != nil || (r.ReasoningText != nil && !validThought(r.ReasoningText.Text, r.ReasoningText.Signature)) {
					return bad("The reasoning content at messages.%d.content.%d has an invalid signature.", i, j)
				}
			}
		}
	}
	req := &request{maxTokens: -1, toolChoice: "auto"}
	if ic := in.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			if *ic.MaxTokens < 1 {
				return bad("1 validation error detected: Value '%d' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1", *ic.MaxTokens)
			}
			req.maxTokens = *ic.MaxTokens
		}
		req.stops = ic.StopSequences
	}
	if tc := in.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.ToolSpec != nil {
				req.tools = append(req.tools, t.ToolSpec.Name)
				req.setSchema(t.ToolSpec.Name, t.ToolSpec.InputSchema.JSON)
			}
		}
		if len(req.tools) == 0 {
			return bad("1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1")
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Any != nil:
				req.toolChoice = "required"
			case ch.Tool != nil:
				if ch.Tool.Name == "" {
					return bad("1 validation error detected: Value null at 'toolConfig.toolChoice.tool.name' failed to satisfy constraint: Member must not be null")
				}
				req.toolChoice, req.forcedTool = "tool", ch.Tool.Name
			}
		}
	} else if toolBlocks {
		return bad("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
	}
	if af := in.AdditionalModelRequestFields; af != nil && af.Thinking != nil {
		max := req.maxTokens
		if max < 0 {
			max = 1 << 30
		}
		var problem string
		if req.thinking, problem = thinkingOf(af.Thinking, max); problem != "" {
			return bad("The model returned the following errors: %s", problem)
		}
	}
	if oc := in.OutputConfig; oc != nil && oc.TextFormat != nil {
		tf := oc.TextFormat
		const at = "outputConfig.textFormat"
		switch {
		case tf.Type == nil:
			return bad("1 validation error detected: Value null at '%s.type' failed to satisfy constraint: Member must not be null", at)
		case *tf.Type != "json_schema":
			return bad("1 validation error detected: Value '%s' at '%s.type' failed to satisfy constraint: Member must satisfy enum value set: [json_schema]", *tf.Type, at)
		case tf.Structure == nil:
			return bad("1 validation error detected: Value null at '%s.structure' failed to satisfy constraint: Member must not be null", at)
		case tf.Structure.JSONSchema == nil:
			return bad("The %s.structure union must set exactly one of its members.", at)
		case tf.Structure.JSONSchema.Schema == nil:
			return bad("1 validation error detected: Value null at '%s.structure.jsonSchema.schema' failed to satisfy constraint: Member must not be null", at)
		}
		schema := []byte(*tf.Structure.JSONSchema.Schema)
		if !json.Valid(schema) {
			return bad("The JSON schema at %s.structure.jsonSchema.schema is not valid JSON.", at)
		}
		req.format = &jsonFormat{schema: schema}
	}
	last := msgs[len(msgs)-1]
	if last.Role == "user" {
		for _, block := range last.Content {
			_, result := block["toolResult"]
			req.lastIsToolResult = req.lastIsToolResult || result
		}
	}
	return req, nil
}

// brExceptions are the modelled exceptions by status (wire-formats.md 4.5),
// with the messages Bedrock sends for them.
var brExceptions = []struct {
	status int
	typ    string
	msg    string
}{
	{400, "ValidationException", "Input is too long for requested model."},
	{403, "AccessDeniedException", "You don't have access to the model with the specified model ID."},
	{404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."},
	{408, "ModelTimeoutException", "Model has timed out in processing the request. Try your request again."},
	{424, "ModelErrorException", "The system encountered an unexpected error during processing. Try your request again."},
	{424, "ModelStreamErrorException", "The model stream returned an error. Try your request again."},
	{429, "ThrottlingException", "Too many requests, please wait before trying again."},
	{500, "InternalServerException", "The system encountered an unexpected error during processing. Try your request again."},
	{503, "ServiceUnavailableException", "Bedrock is unable to process your request."},
}

func (b bedrockConverse) statusError(c *call, status int, sc *Script) *apiError {
	if status == 529 {
		status = http.StatusServiceUnavailable // Bedrock has no "overloaded" status
	}
	e := newAPIError(status, "ValidationException", "", http.StatusText(status), "")
	if status >= 500 {
		e.typ = "InternalServerException"
	}
	if status == http.StatusUnauthorized {
		// AWS answers bad credentials with 403; a forced 401 still names the
		// exception it sends for them.
		e.typ, e.message = "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	for _, x := range brExceptions {
		if x.status == status {
			e.typ, e.message = x.typ, x.msg
			break
		}
	}
	if e.message == "" {
		e.message = fmt.Sprintf("Error %d", status)
	}
	return e.override(sc)
}

// streamError is error_after's in-stream exception: lowerCamel, as Bedrock
// spells union members; its status is the exception's own.
func (b bedrockConverse) streamError(c *call, sc *Script) *apiError {
	e := newAPIError(http.StatusServiceUnavailable, "serviceUnavailableException", "", "Bedrock is unable to process your request.", "").override(sc)
	e.typ = lowerFirst(e.typ)
	e.status = http.StatusInternalServerError
	for _, x := range brExceptions {
		if strings.EqualFold(x.typ, e.typ) {
			e.status = x.status
			if sc == nil || sc.message == "" {
				e.message = x.msg
			}
		}
	}
	return e
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func (b bedrockConverse) badRequest(c *call, msg string) *apiError {
	return newAPIError(http.StatusBadRequest, "ValidationException", "", msg, "")
}

func (b bedrockConverse) notFound(r *http.Request) *apiError {
	return newAPIError(http.StatusNotFound, "UnknownOperationException", "", "Unknown operation "+r.Method+" "+r.URL.EscapedPath(), "")
}

func (b bedrockConverse) methodError(r *http.Request) *apiError {
	return newAPIError(http.StatusMethodNotAllowed, "UnknownOperationException", "", "Unknown operation "+r.Method+" "+r.URL.EscapedPath(), "")
}

// writeError answers with the exception named in X-Amzn-ErrorType (the
// shape name, as the header carries it) and a {"message"} body.
func (b bedrockConverse) writeError(c *call, w http.ResponseWriter, e *apiError) {
	h := w.Header()
	b.headers(c, h, e.status)
	setRetryHeaders(h, e)
	h.Set("X-Amzn-ErrorType", upperFirst(e.typ)+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(marshal(struct {
		Message string `json:"message"`
	}{e.message}))
}

// requestID is a UUID, as x-amzn-RequestId carries.
func (b bedrockConverse) requestID(c *call) string {
	h := c.hexID("", 32, 1)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (b bedrockConverse) toolID(c *call, i int) string { return c.id("tooluse_", 22, 100+uint64(i)) }

func (b bedrockConverse) headers(c *call, h http.Header, status int) {
	h.Set("x-amzn-RequestId", b.requestID(c))
}

func (b bedrockConverse) stopReason(a *answer) string {
	switch a.stop {
	case stopLength:
		return "max_tokens"
	case stopSequence:
		return "stop_sequence"
	case stopTool:
		return "tool_use"
	case stopRefusal:
		return "guardrail_intervened"
	}
	return "end_turn"
}

type brUsage struct {
	InputTokens           int  `json:"inputTokens"`
	OutputTokens          int  `json:"outputTokens"`
	TotalTokens           int  `json:"totalTokens"`
	CacheReadInputTokens  *int `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens *int `json:"cacheWriteInputTokens,omitempty"`
}

type brMetrics struct {
	LatencyMs int64 `json:"latencyMs"`
}

// usage reports cache reads apart from inputTokens; totalTokens adds all
// counts up, as AWS's prompt-caching examples do.
func (b bedrockConverse) usage(a *answer) brUsage {
	u := brUsage{InputTokens: a.input - a.cached, OutputTokens: a.output, TotalTokens: a.input + a.output}
	if a.cached > 0 {
		read, write := a.cached, 0
		u.CacheReadInputTokens, u.CacheWriteInputTokens = &read, &write
	}
	return u
}

type brToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type brBlock struct {
	ReasoningContent *brReasoning `json:"reasoningContent,omitempty"`
	Text             *string      `json:"text,omitempty"`
	ToolUse          *brToolUse   `json:"toolUse,omitempty"`
}

type brReasoning struct {
	ReasoningText struct {
		Text      string `json:"text"`
		Signature string `json:"signature"`
	} `json:"reasoningText"`
}

func (b bedrockConverse) body(c *call, a *answer) []byte {
	content := []brBlock{}
	if len(a.thought) > 0 {
		r := &brReasoning{}
		if !a.thoughtHide {
			r.ReasoningText.Text = strings.Join(a.thought, "")
		}
		r.ReasoningText.Signature = a.signature
		content = append(content, brBlock{ReasoningContent: r})
	}
	if len(a.text) > 0 {
		s := strings.Join(a.text, "")
		content = append(content, brBlock{Text: &s})
	}
	for i, tc := range a.calls {
		content = append(content, brBlock{ToolUse: &brToolUse{ToolUseID: b.toolID(c, i), Name: tc.name, Input: json.RawMessage(tc.args)}})
	}
	type message struct {
		Content []brBlock `json:"content"`
		Role    string    `json:"role"`
	}
	return marshal(struct {
		Metrics brMetrics `json:"metrics"`
		Output  struct {
			Message message `json:"message"`
		} `json:"output"`
		StopReason string  `json:"stopReason"`
		Usage      brUsage `json:"usage"`
	}{
		Metrics: brMetrics{c.elapsedMS()},
		Output: struct {
			Message message `json:"message"`
		}{message{content, "assistant"}},
		StopReason: b.stopReason(a),
		Usage:      b.usage(a),
	})
}

// Event payloads; P is the random-looking padding real streams add.
type (
	brMessageStart struct {
		Role string `json:"role"`
		P    string `json:"p"`
	}
	brBlockStart struct {
		ContentBlockIndex int `json:"contentBlockIndex"`
		Start             struct {
			ToolUse brToolUse `json:"toolUse"`
		} `json:"start"`
		P string `json:"p"`
	}
	brBlockDelta struct {
		ContentBlockIndex int    `json:"contentBlockIndex"`
		Delta             any    `json:"delta"`
		P                 string `json:"p"`
	}
	brTextDelta struct {
		Text string `json:"text"`
	}
	brReasoningTextDelta struct {
		ReasoningContent struct {
			Text string `json:"text"`
		} `json:"reasoningContent"`
	}
	brReasoningSigDelta struct {
		ReasoningContent struct {
			Signature string `json:"signature"`
		} `json:"reasoningContent"`
	}
	brToolDelta struct {
		ToolUse struct {
			Input string `json:"input"`
		} `json:"toolUse"`
	}
	brBlockStop struct {
		ContentBlockIndex int    `json:"contentBlockIndex"`
		P                 string `json:"p"`
	}
	brMessageStop struct {
		StopReason string `json:"stopReason"`
		P          string `json:"p"`
	}
	brMetadata struct {
		Usage   brUsage   `json:"usage"`
		Metrics brMetrics `json:"metrics"`
		P       string    `json:"p"`
	}
)

// bedrockFrame encodes one event-stream message with the AWS encoder.
func bedrockFrame(headers eventstream.Headers, payload []byte) []byte {
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: headers, Payload: payload}); err != nil {
		panic("mock: cannot encode an event-stream message: " + err.Error()) // only fixed, small messages reach here
	}
	return buf.Bytes()
}

// bedrockEvent frames an event with the headers in the order AWS sends
// them.
func bedrockEvent(eventType string, payload []byte) []byte {
	return bedrockFrame(eventstream.Headers{
		{Name: eventstreamapi.EventTypeHeader, Value: eventstream.StringValue(eventType)},
		{Name: eventstreamapi.ContentTypeHeader, Value: eventstream.StringValue("application/json")},
		{Name: eventstreamapi.MessageTypeHeader, Value: eventstream.StringValue(eventstreamapi.EventMessageType)},
	}, payload)
}

func (b bedrockConverse) events(c *call, a *answer) []event {
	var evs []event
	n := uint64(0)
	add := func(kind eventKind, typ string, payload any) {
		n++
		evs = append(evs, event{kind, bedrockEvent(typ, marshal(payload))})
	}
	// pad varies in length, as the real padding does (it hides how long
	// each delta is).
	pad := func() string { return c.id("", 1+int(n*7%23), 500+n) }
	add(evProtocol, "messageStart", brMessageStart{Role: "assistant", P: pad()})
	index := 0
	if len(a.thought) > 0 {
		// Reasoning, like text, opens with its first delta.
		if !a.thoughtHide {
			for _, t := range a.thought {
				var d brReasoningTextDelta
				d.ReasoningContent.Text = t
				add(evContent, "contentBlockDelta", brBlockDelta{ContentBlockIndex: index, Delta: d, P: pad()})
			}
		}
		var d brReasoningSigDelta
		d.ReasoningContent.Signature = a.signature
		add(evContent, "contentBlockDelta", brBlockDelta{ContentBlockIndex: index, Delta: d, P: pad()})
		add(evProtocol, "contentBlockStop", brBlockStop{ContentBlockIndex: index, P: pad()})
		index++
	}
	if len(a.text) > 0 {
		// Text blocks have no contentBlockStart.
		for _, t := range a.text {
			add(evContent, "contentBlockDelta", brBlockDelta{ContentBlockIndex: index, Delta: brTextDelta{t}, P: pad()})
		}
		add(evProtocol, "contentBlockStop", brBlockStop{ContentBlockIndex: index, P: pad()})
		index++
	}
	for i, tc := range a.calls {
		start := brBlockStart{ContentBlockIndex: index, P: pad()}
		start.Start.ToolUse = brToolUse{ToolUseID: b.toolID(c, i), Name: tc.name}
		add(evProtocol, "contentBlockStart", start)
		for _, f := range tc.fragments {
			var d brToolDelta
			d.ToolUse.Input = f
			add(evContent, "contentBlockDelta", brBlockDelta{ContentBlockIndex: index, Delta: d, P: pad()})
		}
		add(evProtocol, "contentBlockStop", brBlockStop{ContentBlockIndex: index, P: pad()})
		index++
	}
	add(evFinal, "messageStop", brMessageStop{StopReason: b.stopReason(a), P: pad()})
	// Usage comes only in metadata, the stream's last event.
	add(evTerminal, "metadata", brMetadata{Usage: b.usage(a), Metrics: brMetrics{c.elapsedMS()}, P: pad()})
	return evs
}

// errorEvent is an in-stream exception: a union member of the stream,
// named lowerCamel in :exception-type.
func (b bedrockConverse) errorEvent(c *call, e *apiError) []byte {
	return bedrockFrame(eventstream.Headers{
		{Name: eventstreamapi.ExceptionTypeHeader, Value: eventstream.StringValue(lowerFirst(e.typ))},
		{Name: eventstreamapi.ContentTypeHeader, Value: eventstream.StringValue("application/json")},
		{Name: eventstreamapi.MessageTypeHeader, Value: eventstream.StringValue(eventstreamapi.ExceptionMessageType)},
	}, marshal(struct {
		Message string `json:"message"`
	}{e.message}))
}

// malformedEvent is a content delta whose message CRC is wrong: the prelude
// holds, so a decoder reads the whole frame and then rejects it.
func (b bedrockConverse) malformedEvent(c *call) []byte {
	f := bedrockEvent("contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"mal"}}`))
	f[len(f)-1] ^= 0xff
	return f
}
