package anthropicmsgs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.body))
	}
	for _, tc := range decodeErrorCases {
		if len(tc.body) < 4096 {
			f.Add([]byte(tc.body))
		}
	}
	f.Add([]byte(typicalRequest))
	d := New()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, p := d.Decode(body, hdr())
		if (req == nil) == (p == nil) {
			t.Fatalf("Decode returned request %v and error %v", req, p)
		}
		valid := json.Valid(body)
		if p != nil {
			if p.Status != 400 || p.Code != "invalid_request" || p.Message == "" {
				t.Fatalf("bad error %+v", p)
			}
			if isSyntax := strings.HasPrefix(p.Message, "request body is not valid JSON"); isSyntax == valid {
				t.Fatalf("json.Valid=%v but %q", valid, p.Message)
			}
			if p.Param != "" && !strings.HasPrefix(p.Message, p.Param+": ") {
				t.Fatalf("message %q does not start with its param %q", p.Message, p.Param)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		checkRequest(t, req, body)
	})
}

// checkRequest holds an accepted request to what every provider adapter
// relies on.
func checkRequest(t *testing.T, req *canonical.Request, body []byte) {
	t.Helper()
	if req.Model == "" || req.MaxTokens < 1 || len(req.Messages) == 0 {
		t.Fatalf("accepted a request without model, max_tokens or messages: %s", body)
	}
	if (req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1)) || (req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1)) {
		t.Fatalf("sampling out of range: %s", body)
	}
	for _, tool := range req.Tools {
		if !dialect.ValidToolName(tool.Name) || !json.Valid(tool.Parameters) || tool.Parameters[0] != '{' {
			t.Fatalf("bad tool %+v", tool)
		}
	}
	calls := map[string]bool{}
	for i, m := range req.Messages {
		switch m.Role {
		case canonical.RoleUser, canonical.RoleAssistant:
		case canonical.RoleTool:
			if !calls[m.ToolCallID] || m.ToolName == "" {
				t.Fatalf("message %d answers an unknown call %q: %s", i, m.ToolCallID, body)
			}
		default:
			t.Fatalf("message %d has role %q", i, m.Role)
		}
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = true
			var v map[string]any
			if err := json.Unmarshal([]byte(tc.Arguments), &v); err != nil || v == nil {
				t.Fatalf("tool call arguments are not an object: %q", tc.Arguments)
			}
			var c bytes.Buffer
			if json.Compact(&c, []byte(tc.Arguments)); c.String() != tc.Arguments {
				t.Fatalf("tool call arguments are not compact: %q", tc.Arguments)
			}
		}
		for _, part := range m.Content {
			if !utf8.ValidString(part.Text) {
				t.Fatalf("text is not UTF-8: %q", part.Text)
			}
			if part.Type == canonical.PartImage && part.ImageURL == "" && (part.MediaType == "" || part.Data == "") {
				t.Fatalf("image without a source: %+v", part)
			}
		}
	}
}

// FuzzEncoders checks that any text, id, name and code survive every
// encoder as events and bodies that encoding/json reads back.
func FuzzEncoders(f *testing.F) {
	f.Add("Hello", "msg_1", "claude", "get_weather", "upstream_error", `{"a":1}`)
	f.Add("\"\\\n\x00\u2028<>&\xff", "id\"", "m\n", "f\x7f", "", `{"a":`)
	f.Fuzz(func(t *testing.T, txt, id, model, name, code, args string) {
		d := New()
		enc := d.NewEncoder(metaOf(id, model), &canonical.Request{Stream: true})
		out := enc.Start(nil)
		for _, ev := range []canonical.Event{textEv(txt), refusalEv(txt), toolStart(0, id, name), toolArgs(0, txt), textEv(txt)} {
			out = enc.Event(out, &ev)
		}
		fin := enc.Finish(bytes.Clone(out), canonical.StopSequence, txt, canonical.Usage{InputTokens: 1})
		intr := enc.Interrupt(out, &failure.Public{Message: txt, Code: code}, 1)
		for _, stream := range [][]byte{fin, intr} {
			for _, ev := range bytes.Split(bytes.TrimSuffix(stream, []byte("\n\n")), []byte("\n\n")) {
				name, data, ok := bytes.Cut(ev, []byte("\ndata: "))
				if !ok || !bytes.HasPrefix(name, []byte("event: ")) || bytes.ContainsAny(data, "\r\n") {
					t.Fatalf("bad SSE event %q", ev)
				}
				var v struct{ Type string }
				if err := json.Unmarshal(data, &v); err != nil || v.Type != string(name[len("event: "):]) {
					t.Fatalf("%v: %s", err, data)
				}
			}
		}
		resp := d.AppendResponse(nil, metaOf(id, model), nil, &canonical.Response{Text: txt, Refusal: txt, Stop: canonical.StopSequence, StopSequence: txt,
			ToolCalls: []canonical.ToolCall{{ID: id, Name: name, Arguments: args}}})
		errBody := d.AppendError(nil, &failure.Public{Status: 400, Message: txt, Param: name, Code: code})
		for _, b := range [][]byte{resp, errBody} {
			if !json.Valid(b) || !utf8.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
		}
		var r struct {
			Content []struct{ Input json.RawMessage }
		}
		if err := json.Unmarshal(resp, &r); err != nil || len(r.Content) == 0 {
			t.Fatalf("%v: %s", err, resp)
		}
		if in := r.Content[len(r.Content)-1].Input; len(in) == 0 || in[0] != '{' {
			t.Fatalf("tool input is not an object: %s", in)
		}
	})
}
