package gemini

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/anthropicbeta"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/provider"
)

// unsupported names the first canonical feature Gemini cannot express, ""
// when req can be sent as is.
func unsupported(req *canonical.Request) string {
	if f := anthropicbeta.FirstClaude(req.Betas); f != "" {
		return provider.BetaUnsupported(f)
	}
	if reason := provider.ForeignThinking(req, canonical.FamilyGemini); reason != "" {
		return reason
	}
	for i := range req.Messages {
		for _, p := range req.Messages[i].Content {
			if p.Type == canonical.PartRedactedThinking {
				return "Gemini has no redacted reasoning to send back"
			}
		}
	}
	if len(req.Tools) > 0 && req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		// Gemini has no switch for parallel function calls; ignoring the
		// caller's "at most one" could hand it several.
		return "Gemini cannot be told to make at most one function call per turn (parallel_tool_calls false)"
	}
	for _, t := range req.Tools {
		if !validFunctionName(t.Name) {
			return "tool name " + strconv.Quote(t.Name) + " is not a valid Gemini function name (a letter or '_' first, then letters, digits, '_', '.', ':' or '-', at most 128)"
		}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		for _, p := range m.Content {
			if p.Type != canonical.PartImage {
				continue
			}
			if m.Role == canonical.RoleTool {
				return "Gemini function responses carry JSON only, not images"
			}
			if p.ImageURL != "" {
				if _, _, ok := parseDataURL(p.ImageURL); !ok {
					// fileData needs a file uploaded through the Files API.
					return "Gemini takes images inline only, not by URL"
				}
			}
		}
		for _, tc := range m.ToolCalls {
			if !jsonread.IsObjectArgs(tc.Arguments) {
				return "tool call " + strconv.Quote(tc.ID) + " has arguments that are not a JSON object; Gemini needs function call args as an object"
			}
		}
		if m.Role == canonical.RoleTool && toolName(req.Messages, i) == "" {
			return "the tool result for call " + strconv.Quote(m.ToolCallID) + " does not name its function, which Gemini needs"
		}
	}
	return ""
}

// validFunctionName applies Gemini's FunctionDeclaration.name rule.
func validFunctionName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// toolName is the function a tool result (msgs[i]) answers: the name its
// dialect gave, else the name of the call with its id in an earlier
// assistant turn; "" when neither is known.
func toolName(msgs []canonical.Message, i int) string {
	m := &msgs[i]
	if m.ToolName != "" {
		return m.ToolName
	}
	for j := i - 1; j >= 0; j-- {
		for _, tc := range msgs[j].ToolCalls {
			if tc.ID == m.ToolCallID {
				return tc.Name
			}
		}
	}
	return ""
}

// skipSignature is the value Google documents for function calls that
// Gemini 3 did not produce itself (history from another model or rung):
// Gemini 3 rejects a replayed functionCall without a thoughtSignature, and
// the canonical request carries none.
const skipSignature = "skip_thought_signature_validator"

// needsSignature reports whether model validates thought signatures
// (Gemini 3 and later 3.x ids; aliases such as "-latest" are not
// recognised).
func needsSignature(model string) bool {
	model = model[strings.LastIndexByte(model, '/')+1:]
	return strings.HasPrefix(model, "gemini-3")
}

// encode writes req as a GenerateContentRequest, appending by hand (this
// runs for every attempt). unsupported(req) must be "". The model goes in
// the URL, not the body.
func encode(req *canonical.Request, t *provider.Target) ([]byte, error) {
	b := make([]byte, 0, 512+req.InputBytes()*9/8)
	b = append(b, `{"contents":`...)
	var err error
	if b, err = appendContents(b, req.Messages, needsSignature(t.Model)); err != nil {
		return nil, err
	}
	if req.System != "" {
		b = append(b, `,"systemInstruction":{"parts":[{"text":`...)
		b = jsonwrite.AppendString(b, req.System)
		b = append(b, "}]}"...)
	}
	// A tool choice means nothing without tools.
	if len(req.Tools) > 0 {
		if b, err = appendTools(b, req.Tools); err != nil {
			return nil, err
		}
		b = appendToolConfig(b, req.ToolChoice)
	}
	if b, err = appendGenerationConfig(b, req, t); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendContents writes the turns. Gemini has the roles user and model:
// tool results travel as functionResponse parts in a user turn, and
// adjacent turns of one role merge into one, so the results answering one
// model turn's calls form one user turn (as Gemini requires: as many
// responses as calls). Messages with nothing to send are left out, since
// Gemini rejects empty parts and empty turns.
func appendContents(b []byte, msgs []canonical.Message, signCalls bool) ([]byte, error) {
	turns := provider.Turns{User: "user", Assistant: "model", Blocks: "parts", Skip: noParts,
		Result: appendFunctionResponse, Parts: appendParts,
		Call: func(b []byte, tc *canonical.ToolCall) ([]byte, error) {
			return appendFunctionCall(b, tc, signCalls)
		}}
	return turns.Append(b, msgs)
}

// appendFunctionCall writes one functionCall part; signCalls adds the
// placeholder thought signature.
func appendFunctionCall(b []byte, tc *canonical.ToolCall, signCalls bool) ([]byte, error) {
	b = jsonwrite.Sep(b)
	b = append(b, `{"functionCall":{"name":`...)
	b = jsonwrite.AppendString(b, tc.Name)
	b = append(b, `,"args":`...)
	b, err := provider.AppendArguments(b, tc.Arguments)
	if err != nil {
		return nil, err
	}
	b = append(b, '}')
	if signCalls {
		b = append(b, `,"thoughtSignature":"`+skipSignature+`"`...)
	}
	return append(b, '}'), nil
}

// noParts reports whether m becomes no part at all (it has only empty
// text, or nothing), so that Turns leaves it out.
func noParts(m *canonical.Message) bool {
	if m.Role == canonical.RoleTool || len(m.ToolCalls) > 0 {
		return false
	}
	for _, p := range m.Content {
		if p.Type != canonical.PartText || p.Text != "" {
			return false
		}
	}
	return true
}

// appendParts writes text and inline image parts; empty text is left out.
func appendParts(b []byte, parts []canonical.Part) []byte {
	for _, p := range parts {
		switch p.Type {
		case canonical.PartText:
			if p.Text == "" {
				continue
			}
			b = jsonwrite.Sep(b)
			b = append(b, `{"text":`...)
			b = jsonwrite.AppendString(b, p.Text)
			b = append(b, '}')
		case canonical.PartImage:
			media, data := p.MediaType, p.Data
			if p.ImageURL != "" {
				media, data, _ = parseDataURL(p.ImageURL) // unsupported() refused other URLs
			}
			b = jsonwrite.Sep(b)
			b = append(b, `{"inlineData":{"mimeType":`...)
			b = jsonwrite.AppendString(b, media)
			b = append(b, `,"data":`...)
			b = jsonwrite.AppendString(b, data)
			b = append(b, "}}"...)
		case canonical.PartThinking:
			// Gemini's own thought, with its signature, as it gave it.
			b = jsonwrite.Sep(b)
			b = append(b, `{"text":`...)
			b = jsonwrite.AppendString(b, p.Text)
			b = append(b, `,"thought":true,"thoughtSignature":`...)
			b = jsonwrite.AppendString(b, p.Signature)
			b = append(b, '}')
		}
	}
	return b
}

// parseDataURL splits "data:image/png;base64,AAAA".
func parseDataURL(u string) (media, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	media, found = strings.CutSuffix(meta, ";base64")
	return media, data, found && media != ""
}

// appendFunctionResponse writes a tool result. Gemini's response must be
// an object; the text result goes under "output", or under "error" when it
// reports a failure: the two keys go-genai documents for
// FunctionResponse.response. Its name is toolName's, hence msgs and i.
func appendFunctionResponse(b []byte, msgs []canonical.Message, i int) []byte {
	m := &msgs[i]
	b = jsonwrite.Sep(b)
	b = append(b, `{"functionResponse":{"name":`...)
	b = jsonwrite.AppendString(b, toolName(msgs, i))
	if m.IsError {
		b = append(b, `,"response":{"error":`...)
	} else {
		b = append(b, `,"response":{"output":`...)
	}
	b = jsonwrite.AppendString(b, m.Text())
	return append(b, "}}}"...)
}

func appendTools(b []byte, tools []canonical.Tool) ([]byte, error) {
	b = append(b, `,"tools":[{"functionDeclarations":[`...)
	for _, t := range tools {
		b = jsonwrite.Sep(b)
		b = append(b, `{"name":`...)
		b = jsonwrite.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonwrite.AppendString(b, t.Description)
		}
		// A function without parameters takes none; the schema is optional.
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			b = append(b, `,"parametersJsonSchema":`...)
			var ok bool
			if b, ok = jsonwrite.AppendCompact(b, t.Parameters); !ok {
				return nil, errors.New("tool " + strconv.Quote(t.Name) + ": parameters are not valid JSON")
			}
		}
		b = append(b, '}')
	}
	return append(b, "]}]"...), nil
}

// appendToolConfig maps the tool choice; nil leaves Gemini's default (AUTO).
// A named tool is mode ANY restricted to that one function.
func appendToolConfig(b []byte, tc *canonical.ToolChoice) []byte {
	if tc == nil || tc.Mode == "" {
		return b
	}
	b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":`...)
	switch tc.Mode {
	case canonical.ToolChoiceNone:
		b = append(b, `"NONE"`...)
	case canonical.ToolChoiceRequired:
		b = append(b, `"ANY"`...)
	case canonical.ToolChoiceTool:
		b = append(b, `"ANY","allowedFunctionNames":[`...)
		b = jsonwrite.AppendString(b, tc.Name)
		b = append(b, ']')
	default:
		b = append(b, `"AUTO"`...)
	}
	return append(b, "}}"...)
}

// appendGenerationConfig writes generationConfig when anything goes in it.
// maxOutputTokens is the request's ceiling, else the deployment's output
// cap; Gemini needs neither.
func appendGenerationConfig(b []byte, req *canonical.Request, t *provider.Target) ([]byte, error) {
	start := len(b)
	b = append(b, `,"generationConfig":{`...)
	open := len(b)
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.MaxOutputTokens
	}
	if maxTokens > 0 {
		b = jsonwrite.Key(b, "maxOutputTokens")
		b = strconv.AppendInt(b, int64(maxTokens), 10)
	}
	var err error
	if b, err = appendFloat(b, "temperature", req.Temperature); err != nil {
		return nil, err
	}
	if b, err = appendFloat(b, "topP", req.TopP); err != nil {
		return nil, err
	}
	if req.TopK != nil {
		b = jsonwrite.Key(b, "topK")
		b = strconv.AppendInt(b, int64(*req.TopK), 10)
	}
	if len(req.Stop) > 0 {
		b = jsonwrite.Key(b, "stopSequences")
		b = append(b, '[')
		for _, s := range req.Stop {
			b = jsonwrite.AppendString(jsonwrite.Sep(b), s)
		}
		b = append(b, ']')
	}
	if f := req.ResponseFormat; f != nil && (f.Type == canonical.FormatJSONObject || f.Type == canonical.FormatJSONSchema) {
		b = jsonwrite.Key(b, "responseMimeType")
		b = append(b, `"application/json"`...)
		if f.Type == canonical.FormatJSONSchema && len(f.Schema) > 0 && string(f.Schema) != "null" {
			b = jsonwrite.Key(b, "responseJsonSchema")
			var ok bool
			if b, ok = jsonwrite.AppendCompact(b, f.Schema); !ok {
				return nil, errors.New("response_format: the JSON schema is not valid JSON")
			}
		}
	}
	if r := req.Reasoning; r != nil {
		b = appendThinkingConfig(b, r)
	}
	if len(b) == open {
		return b[:start], nil // nothing to configure
	}
	return append(b, '}'), nil
}

// appendThinkingConfig maps reasoning onto thinkingConfig: a budget as
// thinkingBudget, an effort as thinkingLevel, adaptive without one as the
// dynamic budget (-1), off as a zero budget; thoughts are included unless
// the caller asked to hide them.
func appendThinkingConfig(b []byte, r *canonical.Reasoning) []byte {
	if r.Mode == canonical.ReasoningDefault && r.Effort == "" {
		return b
	}
	b = jsonwrite.Key(b, "thinkingConfig")
	b = append(b, '{')
	switch {
	case r.Mode == canonical.ReasoningOff:
		return append(b, `"thinkingBudget":0}`...)
	case r.Mode == canonical.ReasoningBudget:
		b = append(b, `"thinkingBudget":`...)
		b = strconv.AppendInt(b, int64(r.BudgetTokens), 10)
	case r.Effort != "":
		b = append(b, `"thinkingLevel":"`...)
		b = append(b, thinkingLevel(r.Effort)...)
		b = append(b, '"')
	default:
		b = append(b, `"thinkingBudget":-1`...)
	}
	b = append(b, `,"includeThoughts":`...)
	b = strconv.AppendBool(b, !r.Hide)
	return append(b, '}')
}

// thinkingLevel maps an effort onto Gemini's levels (MINIMAL, LOW, MEDIUM,
// HIGH): xhigh and max are its highest.
func thinkingLevel(effort string) string {
	switch effort {
	case "minimal":
		return "MINIMAL"
	case "low":
		return "LOW"
	case "medium":
		return "MEDIUM"
	}
	return "HIGH"
}

func appendFloat(b []byte, key string, f *float64) ([]byte, error) {
	if f == nil {
		return b, nil
	}
	if !jsonwrite.Finite(*f) {
		return nil, errors.New(key + " is not a finite number")
	}
	return jsonwrite.AppendFloat(jsonwrite.Key(b, key), *f), nil
}
