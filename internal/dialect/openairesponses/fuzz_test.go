package openairesponses

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/sse"
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
		if req.Model == "" {
			t.Fatalf("accepted a request without a model: %s", body)
		}
		if req.MaxTokens != 0 && req.MaxTokens < minOutputTokens {
			t.Fatalf("max tokens %d", req.MaxTokens)
		}
		for _, tool := range req.Tools {
			if !dialect.ValidToolName(tool.Name) || (tool.Parameters != nil && (!json.Valid(tool.Parameters) || tool.Parameters[0] != '{')) {
				t.Fatalf("bad tool %+v", tool)
			}
		}
		if tc := req.ToolChoice; tc != nil && (len(req.Tools) == 0 || tc.Mode == canonical.ToolChoiceTool && !dialect.Declared(req.Tools, tc.Name)) {
			t.Fatalf("tool choice %+v with tools %+v", tc, req.Tools)
		}
		// Every tool result answers a call of the assistant turn before it,
		// and every call is answered before the next turn.
		pending := map[string]string{}
		for i, m := range req.Messages {
			for _, part := range m.Content {
				if !utf8.ValidString(part.Text) {
					t.Fatalf("text is not UTF-8: %q", part.Text)
				}
			}
			switch m.Role {
			case canonical.RoleTool:
				name, ok := pending[m.ToolCallID]
				if !ok || name != m.ToolName {
					t.Fatalf("message %d answers %q (%q), pending %v", i, m.ToolCallID, m.ToolName, pending)
				}
				delete(pending, m.ToolCallID)
			case canonical.RoleUser, canonical.RoleAssistant:
				if len(pending) != 0 {
					t.Fatalf("message %d starts a turn with calls unanswered: %v", i, pending)
				}
				for _, tc := range m.ToolCalls {
					if tc.ID == "" || tc.Name == "" || tc.Arguments == "" {
						t.Fatalf("bad tool call %+v", tc)
					}
					pending[tc.ID] = tc.Name
				}
			default:
				t.Fatalf("role %q", m.Role)
			}
		}
		if len(pending) != 0 {
			t.Fatalf("calls unanswered at the end: %v", pending)
		}
	})
}

// FuzzStream drives the encoder with arbitrary event sequences (one byte
// picks each event) and checks what any Responses client relies on: SSE
// framing, JSON data, one increasing sequence, deltas that add up to the
// .done texts, and exactly one terminal event, last.
func FuzzStream(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 2, 0, 4}, "a\"b\n\u2028", true)
	f.Add([]byte{2, 3, 0, 2, 3, 1, 1, 0}, "{\"x\":1}", false)
	f.Add([]byte{}, "", true)
	f.Fuzz(func(t *testing.T, script []byte, s string, finish bool) {
		if len(script) > 200 {
			script = script[:200]
		}
		enc := newTestDialect().NewEncoder(testMeta, &canonical.Request{Stream: true})
		out := enc.Start(nil)
		tools := 0
		for i, b := range script {
			frag := s
			if len(s) > 0 {
				frag = s[int(b)%len(s):]
			}
			var ev canonical.Event
			switch b % 5 {
			case 0:
				ev = text(frag)
			case 1:
				ev = refusal(frag)
			case 2:
				ev = toolStart(tools, "call_"+strconv.Itoa(i), "f")
				tools++
			case 3:
				ev = toolArgs(int(b/5)%(tools+1), frag)
			case 4:
				ev = canonical.Event{Kind: canonical.EventUsage}
			}
			out = enc.Event(out, &ev)
		}
		terminal := "response.failed"
		if finish {
			out = enc.Finish(out, canonical.StopReason([]canonical.StopReason{canonical.StopEnd, canonical.StopMaxTokens, canonical.StopToolUse}[len(script)%3]), "", canonical.Usage{InputTokens: 1})
			terminal = map[bool]string{true: "response.incomplete", false: "response.completed"}[len(script)%3 == 1]
		} else {
			out = enc.Interrupt(out, interruptErr, 2)
		}
		checkFuzzedStream(t, out, terminal)
	})
}

func checkFuzzedStream(t *testing.T, out []byte, terminal string) {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	defer r.Release()
	deltas := map[string]string{}
	var last string
	for n := 0; ; n++ {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if last == terminal {
			t.Fatalf("event after %s", terminal)
		}
		var d struct {
			Type      string `json:"type"`
			Seq       *int   `json:"sequence_number"`
			ItemID    string `json:"item_id"`
			Content   int    `json:"content_index"`
			Delta     string `json:"delta"`
			Text      string `json:"text"`
			Refusal   string `json:"refusal"`
			Arguments string `json:"arguments"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("event %d: %v\n%s", n, err, ev.Data)
		}
		if d.Type != string(ev.Name) || d.Seq == nil || *d.Seq != n {
			t.Fatalf("event %d: name %q type %q seq %v", n, ev.Name, d.Type, d.Seq)
		}
		key := d.ItemID + "/" + strconv.Itoa(d.Content)
		switch d.Type {
		case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
			deltas[key] += d.Delta
		case "response.output_text.done":
			if d.Text != deltas[key] {
				t.Fatalf("text done %q, deltas %q", d.Text, deltas[key])
			}
		case "response.refusal.done":
			if d.Refusal != deltas[key] {
				t.Fatalf("refusal done %q, deltas %q", d.Refusal, deltas[key])
			}
		case "response.function_call_arguments.done":
			if d.Arguments != deltas[key] && !(deltas[key] == "" && d.Arguments == "{}") {
				t.Fatalf("arguments done %q, deltas %q", d.Arguments, deltas[key])
			}
		}
		last = d.Type
	}
	if last != terminal {
		t.Fatalf("last event %q, want %q", last, terminal)
	}
}
