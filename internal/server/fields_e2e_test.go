package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

// captureTransport records the bodies sent upstream.
type captureTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	last []byte
}

func (c *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		c.mu.Lock()
		c.last = b
		c.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return c.base.RoundTrip(r)
}

func (c *captureTransport) body() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.last)
}

// fieldRow is one row of the README's table of echoed fields: a request
// carrying the field, and what the gateway does with it.
type fieldRow struct {
	dialect, field, body string
	// refused: the param of the 400; "" when accepted.
	refused string
	// absentUpstream must not appear in what the provider receives.
	absentUpstream string
}

// The inert/meaningful rule: a field SDKs echo back from a response is
// accepted, and carried or dropped as the rung needs; a field is refused
// only when dropping it would change what the caller gets.
func TestEchoedFieldTable(t *testing.T) {
	const (
		chatTool = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
		respTool = `"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}]`
		anTool   = `"tools":[{"name":"f","input_schema":{"type":"object"}}]`
	)
	chat := func(assistant string, extra ...string) string {
		e := ""
		if len(extra) > 0 {
			e = "," + strings.Join(extra, ",")
		}
		return `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"},` + assistant + `,{"role":"user","content":"again"}]` + e + `}`
	}
	chatCall := func(call string) string {
		return `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[` + call + `]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}],` + chatTool + `}`
	}
	resp := func(items string, extra ...string) string {
		e := ""
		if len(extra) > 0 {
			e = "," + strings.Join(extra, ",")
		}
		return `{"model":"` + publicModel + `","input":[{"role":"user","content":"hi"},` + items + `]` + e + `}`
	}
	an := func(assistant string, extra ...string) string {
		e := ""
		if len(extra) > 0 {
			e = "," + strings.Join(extra, ",")
		}
		return `{"model":"` + publicModel + `","max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + assistant + `]},{"role":"user","content":"again"}]` + e + `}`
	}
	anCall := func(block string) string {
		return `{"model":"` + publicModel + `","max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + block + `]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"21C"}]}],` + anTool + `}`
	}
	rows := []fieldRow{
		// OpenAI Chat: the assistant message as openai-node returns it.
		{"chat", "annotations (empty)", chat(`{"role":"assistant","content":"hello","refusal":null,"annotations":[]}`), "", "annotations"},
		{"chat", "annotations (url citations)", chat(`{"role":"assistant","content":"hello","annotations":[{"type":"url_citation","url_citation":{"url":"https://example.com","title":"t","start_index":0,"end_index":5}}]}`), "", "url_citation"},
		{"chat", "refusal null", chat(`{"role":"assistant","content":"hello","refusal":null}`), "", "refusal"},
		{"chat", "refusal text (carried as what the assistant said)", chat(`{"role":"assistant","content":null,"refusal":"I cannot help with that."}`), "", ""},
		{"chat", "audio null", chat(`{"role":"assistant","content":"hello","audio":null}`), "", "audio"},
		{"chat", "audio reference", chat(`{"role":"assistant","content":"hello","audio":{"id":"audio_1"}}`), "messages[1].audio", ""},
		{"chat", "function_call null", chat(`{"role":"assistant","content":"hello","function_call":null}`), "", "function_call"},
		{"chat", "function_call (deprecated form)", chat(`{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}`), "messages[1].function_call", ""},
		{"chat", "parsed (chat.completions.parse)", chat(`{"role":"assistant","content":"{\"a\":1}","refusal":null,"annotations":[],"parsed":{"a":1}}`), "", "parsed"},
		{"chat", "reasoning_content", chat(`{"role":"assistant","content":"hello","reasoning_content":"thought about it"}`), "", "thought about it"},
		{"chat", "content null with tool_calls, parsed_arguments", chatCall(`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}","parsed_arguments":null}}`), "", "parsed_arguments"},
		{"chat", "content [] beside tool_calls (LangChain)", `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}],` + chatTool + `}`, "", ""},
		{"chat", "content [] on a user message", `{"model":"` + publicModel + `","messages":[{"role":"user","content":[]}]}`, "messages[0].content", ""},
		{"chat", "annotations on a user message", `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi","annotations":[]}]}`, "messages[0].annotations", ""},
		// OpenAI Responses: output items pushed back into input.
		{"responses", "message item id, status, annotations, logprobs", resp(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny","annotations":[],"logprobs":[]}]},{"role":"user","content":"again"}`), "", "msg_1"},
		{"responses", "output_text parsed (responses.parse)", resp(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"{}","annotations":[],"logprobs":[],"parsed":null}]},{"role":"user","content":"again"}`), "", "parsed"},
		{"responses", "function_call id, status, parsed_arguments", resp(`{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"call_1","name":"f","parsed_arguments":null},{"type":"function_call_output","call_id":"call_1","output":"sunny"}`, respTool), "", "fc_1"},
		{"responses", "tool strict null (LangChain)", `{"model":"` + publicModel + `","input":"hi","text":{},"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":null}]}`, "", ""},
		// Anthropic Messages: response content appended to messages.
		{"anthropic", "text citations null", an(`{"type":"text","text":"hello","citations":null}`), "", "citations"},
		{"anthropic", "text citations on an assistant turn", an(`{"type":"text","text":"hello","citations":[{"type":"char_location","cited_text":"x","document_index":0,"start_char_index":0,"end_char_index":1}]}`), "", "char_location"},
		{"anthropic", "text citations on a user turn", `{"model":"` + publicModel + `","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"hi","citations":[{"type":"char_location","cited_text":"x","document_index":0,"start_char_index":0,"end_char_index":1}]}]}]}`, "messages.0.content.0.citations", ""},
		{"anthropic", "tool_use caller direct", anCall(`{"type":"tool_use","id":"toolu_1","name":"f","input":{},"caller":{"type":"direct"}}`), "", "caller"},
		{"anthropic", "tool_use called by code execution", anCall(`{"type":"tool_use","id":"toolu_1","name":"f","input":{},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}`), "messages.1.content.0.caller", ""},
		{"anthropic", "tool_use toolset_name null", anCall(`{"type":"tool_use","id":"toolu_1","name":"f","input":{},"toolset_name":null}`), "", "toolset_name"},
		{"anthropic", "cache_control", an(`{"type":"text","text":"hello","cache_control":{"type":"ephemeral"}}`), "", ""},
	}
	capture := &captureTransport{}
	h := newHarnessOpts(t, nil, func(o *server.Options) {
		o.Transport = func(_ *catalog.Deployment, base http.RoundTripper) http.RoundTripper {
			capture.base = base
			return capture
		}
	}, rungSpec{"primary", "openai"})
	paths := map[string]string{"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}
	for _, row := range rows {
		t.Run(row.dialect+" "+row.field, func(t *testing.T) {
			capture.mu.Lock()
			capture.last = nil
			capture.mu.Unlock()
			resp, err := h.post(paths[row.dialect], row.body, "anthropic-version", "2026-10-21")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if row.refused == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				if !strings.Contains(capture.body(), `"hi"`) {
					t.Fatalf("the provider did not receive the conversation: %q", capture.body())
				}
				if row.absentUpstream != "" && strings.Contains(capture.body(), row.absentUpstream) {
					t.Errorf("%q reached the provider: %s", row.absentUpstream, capture.body())
				}
				return
			}
			var e struct {
				Error struct{ Param string } `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			if resp.StatusCode != 400 || e.Error.Param != row.refused {
				t.Fatalf("status %d param %q, want 400 naming %s: %s", resp.StatusCode, e.Error.Param, row.refused, body)
			}
		})
	}
}
