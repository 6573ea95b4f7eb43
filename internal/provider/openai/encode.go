package openai

import (
	"errors"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// defaultSchemaName fills json_schema.name, which OpenAI requires but
// dialects without the concept (Anthropic callers) leave empty.
const defaultSchemaName = "response"

// encode writes req as a streamed Chat Completions body for model,
// appending by hand rather than through reflection: this runs for every
// attempt. It always asks for the usage chunk: the gateway bills from it
// whatever the caller asked.
func encode(req *canonical.Request, model string) ([]byte, error) {
	b := make([]byte, 0, 512+req.InputBytes()*9/8)
	b = append(b, '{')
	b = jsonwrite.Key(b, "model")
	b = jsonwrite.AppendString(b, model)
	b = jsonwrite.Key(b, "messages")
	b = append(b, '[')
	if req.System != "" {
		b = jsonwrite.Sep(b)
		b = append(b, `{"role":"system","content":`...)
		b = jsonwrite.AppendString(b, req.System)
		b = append(b, '}')
	}
	for i := range req.Messages {
		b = jsonwrite.Sep(b)
		b = appendMessage(b, &req.Messages[i])
	}
	b = append(b, ']')
	if req.MaxTokens > 0 {
		b = jsonwrite.Key(b, "max_completion_tokens")
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	var err error
	if b, err = appendFloat(b, "temperature", req.Temperature); err != nil {
		return nil, err
	}
	if b, err = appendFloat(b, "top_p", req.TopP); err != nil {
		return nil, err
	}
	if len(req.Stop) > 0 {
		b = jsonwrite.Key(b, "stop")
		b = append(b, '[')
		for _, s := range req.Stop {
			b = jsonwrite.AppendString(jsonwrite.Sep(b), s)
		}
		b = append(b, ']')
	}
	// tool_choice and parallel_tool_calls are rejected without tools, and
	// mean nothing then.
	if len(req.Tools) > 0 {
		if b, err = appendTools(b, req.Tools); err != nil {
			return nil, err
		}
		b = appendToolChoice(b, req.ToolChoice)
		if p := req.ParallelToolCalls; p != nil {
			b = jsonwrite.Key(b, "parallel_tool_calls")
			b = strconv.AppendBool(b, *p)
		}
	}
	if f := req.ResponseFormat; f != nil {
		if b, err = appendResponseFormat(b, f); err != nil {
			return nil, err
		}
	}
	if r := req.Reasoning; r != nil {
		if e := reasoningEffort(r); e != "" {
			b = append(b, `,"reasoning_effort":"`...)
			b = append(b, e...)
			b = append(b, '"')
		}
	}
	b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	return append(b, '}'), nil
}

func appendMessage(b []byte, m *canonical.Message) []byte {
	switch m.Role {
	case canonical.RoleTool:
		// Tool messages take text only; content is required.
		b = append(b, `{"role":"tool","content":`...)
		b = jsonwrite.AppendString(b, m.Text())
		b = append(b, `,"tool_call_id":`...)
		b = jsonwrite.AppendString(b, m.ToolCallID)
		return append(b, '}')
	case canonical.RoleAssistant:
		b = append(b, `{"role":"assistant"`...)
		// content may be absent when the turn only calls tools.
		if len(m.Content) > 0 || len(m.ToolCalls) == 0 {
			b = jsonwrite.Key(b, "content")
			b = appendContent(b, m.Content)
		}
		if len(m.ToolCalls) > 0 {
			b = jsonwrite.Key(b, "tool_calls")
			b = append(b, '[')
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				b = jsonwrite.Sep(b)
				b = append(b, `{"id":`...)
				b = jsonwrite.AppendString(b, tc.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = jsonwrite.AppendString(b, tc.Name)
				b = append(b, `,"arguments":`...)
				b = jsonwrite.AppendString(b, args)
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
		return append(b, '}')
	}
	b = append(b, `{"role":`...)
	b = jsonwrite.AppendString(b, string(m.Role))
	b = jsonwrite.Key(b, "content")
	b = appendContent(b, m.Content)
	return append(b, '}')
}

// appendContent writes a plain string for one text part (the common case,
// and what every compatible server accepts), parts otherwise.
func appendContent(b []byte, parts []canonical.Part) []byte {
	switch {
	case len(parts) == 0:
		return append(b, `""`...)
	case len(parts) == 1 && parts[0].Type == canonical.PartText:
		return jsonwrite.AppendString(b, parts[0].Text)
	}
	b = append(b, '[')
	for _, p := range parts {
		b = jsonwrite.Sep(b)
		if p.Type == canonical.PartImage {
			b = append(b, `{"type":"image_url","image_url":{"url":`...)
			if p.ImageURL != "" {
				b = jsonwrite.AppendString(b, p.ImageURL)
			} else {
				b = jsonwrite.AppendString(b, "data:"+p.MediaType+";base64,"+p.Data)
			}
			b = append(b, "}}"...)
			continue
		}
		b = append(b, `{"type":"text","text":`...)
		b = jsonwrite.AppendString(b, p.Text)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendTools(b []byte, tools []canonical.Tool) ([]byte, error) {
	b = jsonwrite.Key(b, "tools")
	b = append(b, '[')
	for _, t := range tools {
		b = jsonwrite.Sep(b)
		b = append(b, `{"type":"function","function":{"name":`...)
		b = jsonwrite.AppendString(b, t.Name)
		if t.Description != "" {
			b = jsonwrite.Key(b, "description")
			b = jsonwrite.AppendString(b, t.Description)
		}
		if len(t.Parameters) > 0 {
			var ok bool
			if b, ok = jsonwrite.AppendCompact(jsonwrite.Key(b, "parameters"), t.Parameters); !ok {
				return nil, errors.New("tool " + strconv.Quote(t.Name) + ": parameters are not valid JSON")
			}
		}
		if t.Strict {
			b = append(b, `,"strict":true`...)
		}
		b = append(b, "}}"...)
	}
	return append(b, ']'), nil
}

func appendToolChoice(b []byte, tc *canonical.ToolChoice) []byte {
	if tc == nil {
		return b
	}
	switch tc.Mode {
	case canonical.ToolChoiceTool:
		b = append(b, `,"tool_choice":{"type":"function","function":{"name":`...)
		b = jsonwrite.AppendString(b, tc.Name)
		return append(b, "}}"...)
	case canonical.ToolChoiceRequired:
		return append(b, `,"tool_choice":"required"`...)
	case canonical.ToolChoiceNone:
		return append(b, `,"tool_choice":"none"`...)
	case canonical.ToolChoiceAuto:
		return append(b, `,"tool_choice":"auto"`...)
	}
	return b
}

func appendResponseFormat(b []byte, f *canonical.ResponseFormat) ([]byte, error) {
	switch f.Type {
	case canonical.FormatText:
		return append(b, `,"response_format":{"type":"text"}`...), nil
	case canonical.FormatJSONObject:
		return append(b, `,"response_format":{"type":"json_object"}`...), nil
	case canonical.FormatJSONSchema:
	default:
		return nil, errors.New("unknown response format " + strconv.Quote(string(f.Type)))
	}
	name := f.Name
	if name == "" {
		name = defaultSchemaName
	}
	b = append(b, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
	b = jsonwrite.AppendString(b, name)
	if len(f.Schema) > 0 {
		var ok bool
		if b, ok = jsonwrite.AppendCompact(jsonwrite.Key(b, "schema"), f.Schema); !ok {
			return nil, errors.New("response format schema is not valid JSON")
		}
	}
	if f.Strict {
		b = append(b, `,"strict":true`...)
	}
	return append(b, "}}"...), nil
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

// reasoningEffort maps reasoning onto reasoning_effort: an effort as is, a
// budget to the nearest level, off as "none"; adaptive without an effort
// leaves the model's default.
func reasoningEffort(r *canonical.Reasoning) string {
	switch r.Mode {
	case canonical.ReasoningOff:
		return "none"
	case canonical.ReasoningBudget:
		switch {
		case r.BudgetTokens <= 2048:
			return "low"
		case r.BudgetTokens <= 8192:
			return "medium"
		}
		return "high"
	}
	return r.Effort
}
