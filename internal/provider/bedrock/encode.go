package bedrock

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/provider"
)

// unsupported names the first canonical feature Converse cannot express,
// "" when req can be sent as is.
func unsupported(req *canonical.Request) string {
	if reason := provider.ForeignThinking(req, canonical.FamilyClaude); reason != "" {
		return reason
	}
	if r := req.Reasoning; r != nil && r.Mode == canonical.ReasoningBudget && r.BudgetTokens < 1024 {
		return "Claude on Bedrock thinks within a budget of at least 1024 tokens"
	}
	if f := req.ResponseFormat; f != nil && f.Type == canonical.FormatJSONObject {
		// Converse's structured output takes a schema; dropping the format
		// would silently change what the caller gets.
		return "Bedrock Converse has no JSON mode without a schema (response_format json_object)"
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		return "Bedrock Converse accepts temperature only from 0 to 1"
	}
	if p := req.TopP; p != nil && (*p < 0 || *p > 1) {
		return "Bedrock Converse accepts top_p only from 0 to 1"
	}
	toolHistory := false
	for i := range req.Messages {
		m := &req.Messages[i]
		toolHistory = toolHistory || m.Role == canonical.RoleTool || len(m.ToolCalls) > 0
		for _, p := range m.Content {
			if p.Type != canonical.PartImage {
				continue
			}
			if reason := imageUnsupported(p); reason != "" {
				return reason
			}
		}
		for _, tc := range m.ToolCalls {
			if !jsonread.IsObjectArgs(tc.Arguments) {
				return "tool call " + strconv.Quote(tc.ID) + " has arguments that are not a JSON object; Converse needs tool input as an object"
			}
		}
	}
	sendsTools := len(req.Tools) > 0 && (req.ToolChoice == nil || req.ToolChoice.Mode != canonical.ToolChoiceNone)
	switch {
	case toolHistory && len(req.Tools) == 0:
		return "the conversation holds tool calls but the request declares no tools; Converse needs the tool definitions (toolConfig) to carry them"
	case toolHistory && !sendsTools:
		// Converse has no "none" choice: tools are forbidden by leaving them
		// out, which a conversation with tool calls cannot do.
		return "Converse cannot forbid tool use (tool_choice none) in a conversation that holds tool calls"
	case sendsTools && req.ParallelToolCalls != nil && !*req.ParallelToolCalls:
		return "Converse cannot forbid parallel tool calls (parallel_tool_calls false)"
	}
	return ""
}

// imageFormat is Converse's ImageFormat for a media type, "" when it has
// none.
func imageFormat(media string) string {
	switch strings.ToLower(media) {
	case "image/png":
		return "png"
	case "image/jpeg", "image/jpg":
		return "jpeg"
	case "image/gif":
		return "gif"
	case "image/webp":
		return "webp"
	}
	return ""
}

func imageUnsupported(p canonical.Part) string {
	media := p.MediaType
	if p.ImageURL != "" {
		m, _, ok := parseDataURL(p.ImageURL)
		if !ok {
			// Converse takes image bytes or an S3 location, never a URL.
			return "Bedrock Converse takes images only as inline data; image URLs cannot be sent"
		}
		media = m
	}
	if imageFormat(media) == "" {
		return "Bedrock Converse takes png, jpeg, gif or webp images, not " + strconv.Quote(media)
	}
	return ""
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
	return media, data, found
}

// encode writes req as a Converse body, appending by hand (this runs for
// every attempt). The model travels in the path, and streaming is the
// endpoint's business, so neither is in the body. unsupported(req) must be
// "".
func encode(req *canonical.Request, t *provider.Target) ([]byte, error) {
	b := make([]byte, 0, 512+req.InputBytes()*9/8)
	b = append(b, '{')
	b = jsonwrite.Key(b, "messages")
	var err error
	if b, err = appendMessages(b, req.Messages); err != nil {
		return nil, err
	}
	if req.System != "" {
		b = append(b, `,"system":[{"text":`...)
		b = jsonwrite.AppendString(b, req.System)
		b = append(b, "}]"...)
	}
	if b, err = appendInferenceConfig(b, req, t); err != nil {
		return nil, err
	}
	// Without tools there is no toolConfig, and so no toolChoice; "none" is
	// expressed by leaving the tools out (unsupported refuses it when the
	// conversation needs them).
	if len(req.Tools) > 0 && (req.ToolChoice == nil || req.ToolChoice.Mode != canonical.ToolChoiceNone) {
		if b, err = appendToolConfig(b, req.Tools, req.ToolChoice); err != nil {
			return nil, err
		}
	}
	b = appendAdditionalFields(b, req)
	if f := req.ResponseFormat; f != nil && f.Type == canonical.FormatJSONSchema {
		if b, err = appendOutputConfig(b, f); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendOutputConfig writes Converse's structured output:
// outputConfig.textFormat, whose JSON schema travels as a string.
func appendOutputConfig(b []byte, f *canonical.ResponseFormat) ([]byte, error) {
	schema := f.Schema
	if len(schema) == 0 || string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	compact, ok := jsonwrite.AppendCompact(nil, schema)
	if !ok {
		return nil, errors.New("response_format: the JSON schema is not valid JSON")
	}
	b = append(b, `,"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":`...)
	b = jsonwrite.AppendString(b, string(compact))
	name := f.Name
	if name == "" {
		name = "response"
	}
	b = append(b, `,"name":`...)
	b = jsonwrite.AppendString(b, name)
	return append(b, "}}}}"...), nil
}

// appendAdditionalFields writes additionalModelRequestFields, the fields
// Converse passes to the model untouched, in the Anthropic Messages names
// Claude on Bedrock reads: top_k, thinking, and the caller's beta flags as
// anthropic_beta.
func appendAdditionalFields(b []byte, req *canonical.Request) []byte {
	r := req.Reasoning
	if r != nil && r.Mode == canonical.ReasoningDefault {
		r = nil
	}
	if req.TopK == nil && len(req.Betas) == 0 && r == nil {
		return b
	}
	b = append(b, `,"additionalModelRequestFields":{`...)
	if r != nil {
		b = jsonwrite.Key(b, "thinking")
		switch r.Mode {
		case canonical.ReasoningOff:
			b = append(b, `{"type":"disabled"}`...)
		case canonical.ReasoningBudget:
			b = append(b, `{"type":"enabled","budget_tokens":`...)
			b = strconv.AppendInt(b, int64(r.BudgetTokens), 10)
			b = append(b, '}')
		default:
			b = append(b, `{"type":"adaptive"}`...)
		}
	}
	if req.TopK != nil {
		b = jsonwrite.Key(b, "top_k")
		b = strconv.AppendInt(b, int64(*req.TopK), 10)
	}
	if len(req.Betas) > 0 {
		b = jsonwrite.Key(b, "anthropic_beta")
		b = append(b, '[')
		for _, f := range req.Betas {
			b = jsonwrite.AppendString(jsonwrite.Sep(b), f)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendMessages writes the turns. Converse has only user and assistant
// roles: tool results travel as toolResult blocks in a user turn, and
// adjacent turns of one role merge into one (consecutive tool results
// become one user turn, as the API requires alternating roles).
func appendMessages(b []byte, msgs []canonical.Message) ([]byte, error) {
	turns := provider.Turns{User: "user", Assistant: "assistant", Blocks: "content",
		Result: appendToolResult, Parts: appendParts, Call: appendToolUse}
	return turns.Append(b, msgs)
}

// appendToolUse writes one toolUse block.
func appendToolUse(b []byte, tc *canonical.ToolCall) ([]byte, error) {
	b, err := provider.AppendToolUse(jsonwrite.Sep(b), `{"toolUse":{"toolUseId":`, tc)
	if err != nil {
		return nil, err
	}
	return append(b, "}}"...), nil
}

// appendParts writes text and image blocks. Empty text blocks are left
// out: Converse rejects blank text, and they carry nothing.
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
			b = appendImage(jsonwrite.Sep(b), p)
		case canonical.PartThinking:
			b = jsonwrite.Sep(b)
			b = append(b, `{"reasoningContent":{"reasoningText":{"text":`...)
			b = jsonwrite.AppendString(b, p.Text)
			b = append(b, `,"signature":`...)
			b = jsonwrite.AppendString(b, p.Signature)
			b = append(b, "}}}"...)
		case canonical.PartRedactedThinking:
			b = jsonwrite.Sep(b)
			b = append(b, `{"reasoningContent":{"redactedContent":`...)
			b = jsonwrite.AppendString(b, p.Data)
			b = append(b, "}}"...)
		}
	}
	return b
}

// appendImage writes an inline image: rest-json sends the blob as the
// base64 text canonical already holds. unsupported has checked the format.
func appendImage(b []byte, p canonical.Part) []byte {
	media, data := p.MediaType, p.Data
	if p.ImageURL != "" {
		media, data, _ = parseDataURL(p.ImageURL)
	}
	b = append(b, `{"image":{"format":"`...)
	b = append(b, imageFormat(media)...)
	b = append(b, `","source":{"bytes":`...)
	b = jsonwrite.AppendString(b, data)
	return append(b, "}}}"...)
}

// appendToolResult writes a toolResult block. Its content list is required;
// an empty result is sent as an empty list rather than a blank text block,
// which Converse rejects. status is sent only for errors: it is optional, and
// only some models accept it.
func appendToolResult(b []byte, msgs []canonical.Message, i int) []byte {
	m := &msgs[i]
	b = jsonwrite.Sep(b)
	b = append(b, `{"toolResult":{"toolUseId":`...)
	b = jsonwrite.AppendString(b, m.ToolCallID)
	b = append(b, `,"content":[`...)
	hasImage := false
	for _, p := range m.Content {
		hasImage = hasImage || p.Type == canonical.PartImage
	}
	if hasImage {
		b = appendParts(b, m.Content)
	} else if text := m.Text(); text != "" {
		b = append(b, `{"text":`...)
		b = jsonwrite.AppendString(b, text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if m.IsError {
		b = append(b, `,"status":"error"`...)
	}
	return append(b, "}}"...)
}

// appendInferenceConfig writes maxTokens (the request's ceiling, else the
// deployment's output cap; Converse does not require one), temperature, topP
// and stopSequences, leaving the object out when all are unset.
func appendInferenceConfig(b []byte, req *canonical.Request, t *provider.Target) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.MaxOutputTokens
	}
	if maxTokens <= 0 && req.Temperature == nil && req.TopP == nil && len(req.Stop) == 0 {
		return b, nil
	}
	b = append(b, `,"inferenceConfig":{`...)
	if maxTokens > 0 {
		b = jsonwrite.Key(b, "maxTokens")
		b = strconv.AppendInt(b, int64(maxTokens), 10)
	}
	var err error
	if b, err = appendFloat(b, "temperature", req.Temperature); err != nil {
		return nil, err
	}
	if b, err = appendFloat(b, "topP", req.TopP); err != nil {
		return nil, err
	}
	if len(req.Stop) > 0 {
		b = jsonwrite.Key(b, "stopSequences")
		b = append(b, '[')
		for _, s := range req.Stop {
			b = jsonwrite.AppendString(jsonwrite.Sep(b), s)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendToolConfig(b []byte, tools []canonical.Tool, choice *canonical.ToolChoice) ([]byte, error) {
	b = append(b, `,"toolConfig":{"tools":[`...)
	for _, t := range tools {
		b = jsonwrite.Sep(b)
		b = append(b, `{"toolSpec":{"name":`...)
		b = jsonwrite.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonwrite.AppendString(b, t.Description)
		}
		b = append(b, `,"inputSchema":{"json":`...)
		if len(t.Parameters) == 0 {
			// inputSchema is required; a tool without parameters takes none.
			b = append(b, `{"type":"object","properties":{}}`...)
		} else {
			var ok bool
			if b, ok = jsonwrite.AppendCompact(b, t.Parameters); !ok {
				return nil, errors.New("tool " + strconv.Quote(t.Name) + ": parameters are not valid JSON")
			}
		}
		b = append(b, '}')
		if t.Strict {
			b = append(b, `,"strict":true`...)
		}
		b = append(b, "}}"...)
	}
	b = append(b, ']')
	if choice != nil {
		switch choice.Mode {
		case canonical.ToolChoiceAuto:
			b = append(b, `,"toolChoice":{"auto":{}}`...)
		case canonical.ToolChoiceRequired:
			b = append(b, `,"toolChoice":{"any":{}}`...)
		case canonical.ToolChoiceTool:
			b = append(b, `,"toolChoice":{"tool":{"name":`...)
			b = jsonwrite.AppendString(b, choice.Name)
			b = append(b, "}}"...)
		}
	}
	return append(b, '}'), nil
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
