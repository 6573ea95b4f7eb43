package anthropic

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/provider"
)

// unsupported names the first canonical feature Messages cannot express,
// "" when req can be sent as is.
func unsupported(req *canonical.Request) string {
	if req.Embed != nil {
		return "Anthropic has no embeddings API"
	}
	if f := req.ResponseFormat; f != nil && f.Type == canonical.FormatJSONObject {
		// Messages has structured output for a schema only (output_config
		// .format); dropping the format would silently change the answer.
		return "Anthropic Messages has no JSON mode without a schema (response_format json_object)"
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		return "Anthropic accepts temperature only from 0 to 1"
	}
	if r := req.Reasoning; r != nil && r.Mode == canonical.ReasoningBudget {
		switch {
		case r.BudgetTokens < minThinkingBudget:
			return "Anthropic's thinking budget is at least 1024 tokens"
		case req.MaxTokens > 0 && r.BudgetTokens >= req.MaxTokens:
			return "Anthropic's thinking budget must be below max_tokens"
		}
	}
	if reason := provider.ForeignThinking(req, canonical.FamilyClaude); reason != "" {
		return reason
	}
	for i := range req.Messages {
		for _, tc := range req.Messages[i].ToolCalls {
			if !jsonread.IsObjectArgs(tc.Arguments) {
				return "tool call " + strconv.Quote(tc.ID) + " has arguments that are not a JSON object; Anthropic needs tool input as an object"
			}
		}
	}
	return ""
}

// encode writes req as a streamed Messages body, appending by hand (this
// runs for every attempt). unsupported(req) must be "".
func encode(req *canonical.Request, t *provider.Target) ([]byte, error) {
	return encodeBody(req, t, false)
}

// encodeBody writes a Messages body; a count_tokens body (count) has no
// max_tokens, sampling, stop or stream fields, which that endpoint refuses.
func encodeBody(req *canonical.Request, t *provider.Target, count bool) ([]byte, error) {
	b := make([]byte, 0, 512+req.InputBytes()*9/8)
	b = append(b, '{')
	b = jsonwrite.Key(b, "model")
	b = jsonwrite.AppendString(b, t.Model)
	// max_tokens is required: the request's ceiling, else the deployment's
	// output cap, else a default.
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.MaxOutputTokens
	}
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	if !count {
		b = jsonwrite.Key(b, "max_tokens")
		b = strconv.AppendInt(b, int64(maxTokens), 10)
	}
	if req.System != "" {
		b = jsonwrite.Key(b, "system")
		b = jsonwrite.AppendString(b, req.System)
	}
	b = jsonwrite.Key(b, "messages")
	var err error
	if b, err = appendMessages(b, req.Messages); err != nil {
		return nil, err
	}
	if count {
		if len(req.Tools) > 0 {
			if b, err = appendTools(b, req.Tools); err != nil {
				return nil, err
			}
			b = appendToolChoice(b, req.ToolChoice, req.ParallelToolCalls)
		}
		if r := req.Reasoning; r != nil {
			b = appendThinking(b, r)
		}
		if b, err = appendOutputConfig(b, req); err != nil {
			return nil, err
		}
		return append(b, '}'), nil
	}
	if len(req.Stop) > 0 {
		b = jsonwrite.Key(b, "stop_sequences")
		b = append(b, '[')
		for _, s := range req.Stop {
			b = jsonwrite.AppendString(jsonwrite.Sep(b), s)
		}
		b = append(b, ']')
	}
	if b, err = appendFloat(b, "temperature", req.Temperature); err != nil {
		return nil, err
	}
	if b, err = appendFloat(b, "top_p", req.TopP); err != nil {
		return nil, err
	}
	if req.TopK != nil {
		b = jsonwrite.Key(b, "top_k")
		b = strconv.AppendInt(b, int64(*req.TopK), 10)
	}
	// tool_choice means nothing without tools, and is refused then.
	if len(req.Tools) > 0 {
		if b, err = appendTools(b, req.Tools); err != nil {
			return nil, err
		}
		b = appendToolChoice(b, req.ToolChoice, req.ParallelToolCalls)
	}
	if r := req.Reasoning; r != nil {
		b = appendThinking(b, r)
	}
	if b, err = appendOutputConfig(b, req); err != nil {
		return nil, err
	}
	b = append(b, `,"stream":true`...)
	return append(b, '}'), nil
}

// appendMessages writes the turns. Messages has only user and assistant
// roles: tool results travel as tool_result blocks in a user turn, and
// adjacent turns of one role merge into one (consecutive tool results
// become one user turn, as the API requires).
func appendMessages(b []byte, msgs []canonical.Message) ([]byte, error) {
	turns := provider.Turns{User: "user", Assistant: "assistant", Blocks: "content",
		Result: appendToolResult, Parts: appendParts, Call: appendToolUse}
	return turns.Append(b, msgs)
}

// appendToolUse writes one tool_use block.
func appendToolUse(b []byte, tc *canonical.ToolCall) ([]byte, error) {
	b, err := provider.AppendToolUse(jsonwrite.Sep(b), `{"type":"tool_use","id":`, tc)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendParts writes text and image blocks. Empty text blocks are left
// out: the API rejects them, and they carry nothing.
func appendParts(b []byte, parts []canonical.Part) []byte {
	for _, p := range parts {
		switch p.Type {
		case canonical.PartText:
			if p.Text == "" {
				continue
			}
			b = jsonwrite.Sep(b)
			b = append(b, `{"type":"text","text":`...)
			b = jsonwrite.AppendString(b, p.Text)
			b = append(b, '}')
		case canonical.PartImage:
			b = appendImage(jsonwrite.Sep(b), p)
		case canonical.PartThinking:
			// Unchanged, as the API requires of reasoning sent back.
			b = jsonwrite.Sep(b)
			b = append(b, `{"type":"thinking","thinking":`...)
			b = jsonwrite.AppendString(b, p.Text)
			b = append(b, `,"signature":`...)
			b = jsonwrite.AppendString(b, p.Signature)
			b = append(b, '}')
		case canonical.PartRedactedThinking:
			b = jsonwrite.Sep(b)
			b = append(b, `{"type":"redacted_thinking","data":`...)
			b = jsonwrite.AppendString(b, p.Data)
			b = append(b, '}')
		}
	}
	return b
}

// appendThinking writes thinking. unsupported(req) has checked the budget.
func appendThinking(b []byte, r *canonical.Reasoning) []byte {
	switch r.Mode {
	case canonical.ReasoningOff:
		return append(b, `,"thinking":{"type":"disabled"}`...)
	case canonical.ReasoningBudget:
		b = append(b, `,"thinking":{"type":"enabled","budget_tokens":`...)
		b = strconv.AppendInt(b, int64(r.BudgetTokens), 10)
	case canonical.ReasoningAdaptive:
		b = append(b, `,"thinking":{"type":"adaptive"`...)
	default:
		return b
	}
	switch {
	case r.Show:
		b = append(b, `,"display":"summarized"`...)
	case r.Hide:
		b = append(b, `,"display":"omitted"`...)
	}
	return append(b, '}')
}

// appendOutputConfig writes output_config: the effort (with adaptive
// thinking, or alone) and a JSON schema format.
func appendOutputConfig(b []byte, req *canonical.Request) ([]byte, error) {
	var eff string
	if r := req.Reasoning; r != nil && (r.Mode == canonical.ReasoningAdaptive || r.Mode == canonical.ReasoningDefault) {
		eff = r.Effort
	}
	f := req.ResponseFormat
	hasFormat := f != nil && f.Type == canonical.FormatJSONSchema
	if eff == "" && !hasFormat {
		return b, nil
	}
	b = append(b, `,"output_config":{`...)
	if eff != "" {
		b = append(b, `"effort":"`...)
		b = append(b, effort(eff)...)
		b = append(b, '"')
	}
	if hasFormat {
		b = jsonwrite.Key(b, "format")
		b = append(b, `{"type":"json_schema","schema":`...)
		schema := f.Schema
		if len(schema) == 0 || string(schema) == "null" {
			schema = []byte(`{"type":"object"}`)
		}
		var ok bool
		if b, ok = jsonwrite.AppendCompact(b, schema); !ok {
			return nil, errors.New("response_format: the JSON schema is not valid JSON")
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// effort maps an effort onto Anthropic's levels (low, medium, high,
// xhigh, max): "minimal", which Anthropic lacks, is its lowest.
func effort(e string) string {
	if e == "minimal" {
		return "low"
	}
	return e
}

// minThinkingBudget is Anthropic's floor for budget_tokens.
const minThinkingBudget = 1024

func appendImage(b []byte, p canonical.Part) []byte {
	media, data := p.MediaType, p.Data
	if p.ImageURL != "" {
		// A data: URL is inline data, which Anthropic takes as base64 only.
		m, d, ok := parseDataURL(p.ImageURL)
		if !ok {
			b = append(b, `{"type":"image","source":{"type":"url","url":`...)
			b = jsonwrite.AppendString(b, p.ImageURL)
			return append(b, "}}"...)
		}
		media, data = m, d
	}
	b = append(b, `{"type":"image","source":{"type":"base64","media_type":`...)
	b = jsonwrite.AppendString(b, media)
	b = append(b, `,"data":`...)
	b = jsonwrite.AppendString(b, data)
	return append(b, "}}"...)
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

func appendToolResult(b []byte, msgs []canonical.Message, i int) []byte {
	m := &msgs[i]
	b = jsonwrite.Sep(b)
	b = append(b, `{"type":"tool_result","tool_use_id":`...)
	b = jsonwrite.AppendString(b, m.ToolCallID)
	hasImage := false
	for _, p := range m.Content {
		hasImage = hasImage || p.Type == canonical.PartImage
	}
	switch {
	case hasImage:
		b = append(b, `,"content":[`...)
		b = appendParts(b, m.Content)
		b = append(b, ']')
	default:
		if text := m.Text(); text != "" {
			b = append(b, `,"content":`...)
			b = jsonwrite.AppendString(b, text)
		}
	}
	if m.IsError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, '}')
}

func appendTools(b []byte, tools []canonical.Tool) ([]byte, error) {
	b = jsonwrite.Key(b, "tools")
	b = append(b, '[')
	for _, t := range tools {
		b = jsonwrite.Sep(b)
		b = append(b, `{"name":`...)
		b = jsonwrite.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonwrite.AppendString(b, t.Description)
		}
		b = append(b, `,"input_schema":`...)
		if len(t.Parameters) == 0 {
			// input_schema is required; a tool without parameters takes none.
			b = append(b, `{"type":"object","properties":{}}`...)
		} else {
			var ok bool
			if b, ok = jsonwrite.AppendCompact(b, t.Parameters); !ok {
				return nil, errors.New("tool " + strconv.Quote(t.Name) + ": parameters are not valid JSON")
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendToolChoice maps the choice; parallel=false becomes
// disable_parallel_tool_use, which needs a tool_choice object to ride on
// (auto when the caller named none), and does not apply to "none".
func appendToolChoice(b []byte, tc *canonical.ToolChoice, parallel *bool) []byte {
	mode := canonical.ToolChoiceMode("")
	if tc != nil {
		mode = tc.Mode
	}
	disable := parallel != nil && !*parallel
	if mode == "" && !disable {
		return b
	}
	b = append(b, `,"tool_choice":{"type":`...)
	switch mode {
	case canonical.ToolChoiceNone:
		return append(b, `"none"}`...)
	case canonical.ToolChoiceRequired:
		b = append(b, `"any"`...)
	case canonical.ToolChoiceTool:
		b = append(b, `"tool","name":`...)
		b = jsonwrite.AppendString(b, tc.Name)
	default:
		b = append(b, `"auto"`...)
	}
	if disable {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
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
