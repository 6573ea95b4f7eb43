package openaichat

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
	d := New()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, p := d.Decode(body, nil)
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
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if req.Model == "" || (len(req.Messages) == 0 && req.System == "" && !bytes.Contains(body, []byte(`"system"`)) && !bytes.Contains(body, []byte(`"developer"`))) {
			t.Fatalf("accepted a request without model or messages: %s", body)
		}
		for _, tool := range req.Tools {
			if !dialect.ValidToolName(tool.Name) || (tool.Parameters != nil && (!json.Valid(tool.Parameters) || tool.Parameters[0] != '{')) {
				t.Fatalf("bad tool %+v", tool)
			}
		}
		for _, m := range req.Messages {
			for _, part := range m.Content {
				if !utf8.ValidString(part.Text) {
					t.Fatalf("text is not UTF-8: %q", part.Text)
				}
			}
		}
	})
}

// FuzzEncoders checks that any text, id and name survive every encoder as
// JSON that encoding/json reads back.
func FuzzEncoders(f *testing.F) {
	f.Add("Hello", "chatcmpl-1", "gpt-4o", "get_weather", "upstream_error")
	f.Add("\"\\\n\x00\u2028<>&\xff", "id\"", "m\n", "f\x7f", "")
	f.Fuzz(func(t *testing.T, txt, id, model, name, code string) {
		d := New()
		enc := d.NewEncoder(metaOf(id, model), &canonical.Request{IncludeUsage: true})
		out := enc.Start(nil)
		for _, ev := range []canonical.Event{text(txt), refusal(txt), toolStart(0, id, name), toolArgs(0, txt)} {
			out = enc.Event(out, &ev)
		}
		fin := enc.Finish(bytes.Clone(out), canonical.StopToolUse, txt, canonical.Usage{InputTokens: 1})
		intr := enc.Interrupt(out, &failure.Public{Message: txt, Code: code}, 1)
		for _, stream := range [][]byte{fin, intr} {
			for _, ev := range bytes.Split(bytes.TrimSuffix(stream, []byte("\n\n")), []byte("\n\n")) {
				data, ok := bytes.CutPrefix(ev, []byte("data: "))
				if !ok || bytes.ContainsAny(data, "\r\n") {
					t.Fatalf("bad SSE event %q", ev)
				}
				if string(data) == "[DONE]" {
					continue
				}
				var v map[string]any
				if err := json.Unmarshal(data, &v); err != nil {
					t.Fatalf("%v: %s", err, data)
				}
			}
		}
		var chunk struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		first := bytes.Index(out, []byte("\n\ndata: ")) + len("\n\ndata: ")
		if txt != "" {
			if err := json.Unmarshal(out[first:first+bytes.Index(out[first:], []byte("\n\n"))], &chunk); err != nil || chunk.Choices[0].Delta.Content != strings.ToValidUTF8(txt, "\ufffd") && utf8.ValidString(txt) {
				t.Fatalf("content chunk does not round-trip %q: %+v %v", txt, chunk, err)
			}
		}
		resp := d.AppendResponse(nil, metaOf(id, model), nil, &canonical.Response{Text: txt, Refusal: txt, ToolCalls: []canonical.ToolCall{{ID: id, Name: name, Arguments: txt}}})
		errBody := d.AppendError(nil, &failure.Public{Status: 400, Message: txt, Param: name, Code: code})
		for _, b := range [][]byte{resp, errBody} {
			if !json.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
		}
	})
}
