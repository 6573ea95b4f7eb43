package openai

import (
	"bytes"
	"encoding/json"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// chatRequest is the Chat Completions request body. Field order follows the
// wire examples so encoded bodies read naturally in golden files.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a string, a []contentPart, or nil (an assistant turn that
	// only calls tools).
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imagePart struct {
	Type     string   `json:"type"`
	ImageURL imageURL `json:"image_url"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// defaultSchemaName fills json_schema.name, which OpenAI requires but
// dialects without the concept (Anthropic callers) leave empty.
const defaultSchemaName = "response"

// encode writes req as a Chat Completions body for model. Streaming always
// asks for the usage chunk: the gateway bills from it whatever the caller
// asked.
func encode(req *canonical.Request, model string, stream bool) ([]byte, error) {
	body := chatRequest{
		Model:               model,
		Messages:            encodeMessages(req),
		MaxCompletionTokens: req.MaxTokens,
		Temperature:         req.Temperature,
		TopP:                req.TopP,
		Stop:                req.Stop,
	}
	// tool_choice and parallel_tool_calls are rejected without tools, and
	// mean nothing then.
	if len(req.Tools) > 0 {
		body.Tools = make([]chatTool, len(req.Tools))
		for i, t := range req.Tools {
			body.Tools[i] = chatTool{Type: "function", Function: functionDef{
				Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
			}}
		}
		body.ToolChoice = encodeToolChoice(req.ToolChoice)
		body.ParallelToolCalls = req.ParallelToolCalls
	}
	if f := req.ResponseFormat; f != nil {
		body.ResponseFormat = &responseFormat{Type: string(f.Type)}
		if f.Type == canonical.FormatJSONSchema {
			name := f.Name
			if name == "" {
				name = defaultSchemaName
			}
			body.ResponseFormat.JSONSchema = &jsonSchema{Name: name, Schema: f.Schema, Strict: f.Strict}
		}
	}
	if stream {
		body.Stream = true
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	var buf bytes.Buffer
	buf.Grow(256 + req.InputBytes()*11/10)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&body); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeMessages(req *canonical.Request) []chatMessage {
	n := len(req.Messages)
	if req.System != "" {
		n++
	}
	out := make([]chatMessage, 0, n)
	if req.System != "" {
		out = append(out, chatMessage{Role: "system", Content: req.System})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case canonical.RoleTool:
			// Tool messages take text only; content is required.
			out = append(out, chatMessage{Role: "tool", Content: m.Text(), ToolCallID: m.ToolCallID})
		case canonical.RoleAssistant:
			cm := chatMessage{Role: "assistant", Content: encodeContent(m.Content)}
			if len(m.ToolCalls) > 0 {
				cm.ToolCalls = make([]chatToolCall, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					args := tc.Arguments
					if args == "" {
						args = "{}"
					}
					cm.ToolCalls[j] = chatToolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Name, Arguments: args}}
				}
				if len(m.Content) == 0 {
					cm.Content = nil // content may be absent when the turn only calls tools
				}
			}
			out = append(out, cm)
		default:
			out = append(out, chatMessage{Role: string(m.Role), Content: encodeContent(m.Content)})
		}
	}
	return out
}

// encodeContent is a plain string for one text part (the common case and
// what every compatible server accepts), parts otherwise.
func encodeContent(parts []canonical.Part) any {
	switch {
	case len(parts) == 0:
		return ""
	case len(parts) == 1 && parts[0].Type == canonical.PartText:
		return parts[0].Text
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		if p.Type == canonical.PartImage {
			url := p.ImageURL
			if url == "" {
				url = "data:" + p.MediaType + ";base64," + p.Data
			}
			out[i] = imagePart{Type: "image_url", ImageURL: imageURL{URL: url}}
			continue
		}
		out[i] = textPart{Type: "text", Text: p.Text}
	}
	return out
}

func encodeToolChoice(tc *canonical.ToolChoice) any {
	if tc == nil {
		return nil
	}
	switch tc.Mode {
	case canonical.ToolChoiceTool:
		var c namedToolChoice
		c.Type = "function"
		c.Function.Name = tc.Name
		return c
	case canonical.ToolChoiceRequired:
		return "required"
	case canonical.ToolChoiceNone:
		return "none"
	case canonical.ToolChoiceAuto:
		return "auto"
	}
	return nil
}
