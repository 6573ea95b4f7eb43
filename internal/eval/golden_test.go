package eval

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const (
	chatReq   = `{"messages":[{"role":"user","content":"hi"}]}`
	schemaReq = `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}}`
	toolReq   = `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`
)

func goldenLine(id, req, expect string) string {
	return fmt.Sprintf(`{"id":%q,"request":%s,"expect":%s}`, id, req, expect)
}

// Each bad line is reported with its number and what is wrong, all in
// one pass; nothing is run from a file with a bad line.
func TestParseGoldenRefusesBadLines(t *testing.T) {
	good := goldenLine("ok", chatReq, `{"finish_reason":"stop"}`)
	tests := []struct {
		name string
		file string
		want []string // every one must appear, with its line
	}{
		{"not JSON", good + "\n{\"id\":\"x\",\n", []string{"g.jsonl:2: not a golden case (unexpected EOF)"}},
		{"unknown field", good + "\n" + `{"id":"x","request":` + chatReq + `,"expect":{"text":"a"},"expected":1}`, []string{`g.jsonl:2: not a golden case (unknown field "expected")`}},
		{"unknown expectation", `{"id":"x","request":` + chatReq + `,"expect":{"txt":"a"}}`, []string{`g.jsonl:1: not a golden case (unknown field "txt")`}},
		{"two values", good + " " + good, []string{"g.jsonl:1: more than one JSON value"}},
		{"no id", goldenLine("", chatReq, `{"text":"a"}`), []string{`g.jsonl:1: id "": want 1 to 64`}},
		{"bad id", goldenLine("a b", chatReq, `{"text":"a"}`), []string{`g.jsonl:1: id "a b"`}},
		{"duplicate id", good + "\n\n" + good, []string{`g.jsonl:3: case id "ok" is used on line 1 already`}},
		{"request not an object", `{"id":"x","request":"hi","expect":{"text":"a"}}`, []string{"g.jsonl:1: case x: request: want an OpenAI Chat Completions request object"}},
		{"request the gateway refuses", goldenLine("x", `{"model":"m"}`, `{"text":"a"}`), []string{"g.jsonl:1: case x: request: Missing required parameter: 'messages'"}},
		{"request with an unknown field", goldenLine("x", `{"messages":[{"role":"user","content":"hi"}],"temprature":1}`, `{"text":"a"}`), []string{"case x: request: ", "temprature"}},
		{"no expect", `{"id":"x","request":` + chatReq + `}`, []string{"g.jsonl:1: case x: expect: required"}},
		{"nothing to check", goldenLine("x", chatReq, `{}`), []string{"g.jsonl:1: case x: expect: nothing to check"}},
		{"unknown finish reason", goldenLine("x", chatReq, `{"finish_reason":"end_turn"}`), []string{`case x: expect.finish_reason: "end_turn" is not one of stop, length, tool_calls, content_filter`}},
		{"schema from a request without one", goldenLine("x", chatReq, `{"schema":"request"}`), []string{`case x: expect.schema: "request": the request has no response_format json_schema`}},
		{"schema not a schema", goldenLine("x", chatReq, `{"schema":{"type":7}}`), []string{"case x: expect.schema:"}},
		{"bad required path", goldenLine("x", chatReq, `{"required":["a..b"]}`), []string{`case x: expect.required: "a..b"`}},
		{"tool call of an undeclared tool", goldenLine("x", toolReq, `{"tool_call":{"name":"get_time"}}`), []string{`case x: expect.tool_call.name: the request declares no tool "get_time"`}},
		{"tool arguments not an object", goldenLine("x", toolReq, `{"tool_call":{"name":"get_weather","arguments":[1]}}`), []string{"case x: expect.tool_call.arguments: want a JSON object"}},
		{"several bad lines", "nope\n" + good + "\n" + goldenLine("y", chatReq, `{}`), []string{"g.jsonl:1: not a golden case", "g.jsonl:3: case y: expect: nothing to check"}},
		{"line too long", good + "\n" + `{"id":"` + strings.Repeat("x", MaxLineBytes) + "\"}\n", []string{"g.jsonl:2: line longer than 1024 KiB"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGolden(strings.NewReader(tc.file), "g.jsonl")
			if err == nil {
				t.Fatalf("parsed %d cases, want an error", len(g.Cases))
			}
			var les LineErrors
			if !errors.As(err, &les) {
				t.Fatalf("error %T %v, want LineErrors", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseGoldenBounds(t *testing.T) {
	if _, err := ParseGolden(strings.NewReader("\n\n  \n"), "g.jsonl"); err == nil || !strings.Contains(err.Error(), "no cases") {
		t.Errorf("empty file: %v", err)
	}
	var b strings.Builder
	for i := range MaxCases + 1 {
		b.WriteString(goldenLine(fmt.Sprint("c", i), chatReq, `{"finish_reason":"stop"}`) + "\n")
	}
	if _, err := ParseGolden(strings.NewReader(b.String()), "g.jsonl"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("g.jsonl:%d: more than %d cases", MaxCases+1, MaxCases)) {
		t.Errorf("too many cases: %v", err)
	}
	big := strings.Repeat(" ", MaxGoldenBytes+1)
	if _, err := ParseGolden(strings.NewReader(big), "g.jsonl"); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("too large: %v", err)
	}
}

func TestParseGolden(t *testing.T) {
	file := goldenLine("plain", chatReq, `{"text":"mock","finish_reason":"length"}`) + "\n\n" +
		goldenLine("schema", schemaReq, `{"json":true,"schema":"request","required":["a"]}`) + "\r\n" +
		goldenLine("tool", toolReq, `{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"},"schema":"request","required":["city"]}}`) + "\n"
	g, err := ParseGolden(strings.NewReader(file), "g.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) != 3 || g.Cases[1].Line != 3 || g.Cases[2].Line != 4 || len(g.SHA256) != 64 {
		t.Fatalf("%+v", g)
	}
	c := g.Cases[0]
	if c.req.Model != placeholderModel || c.req.Stream || *c.Expect.Text != "mock" {
		t.Errorf("case 0: %+v %+v", c.req, c.Expect)
	}
	if g.Cases[1].schema == nil || g.Cases[2].toolSchema == nil {
		t.Error("schemas not compiled")
	}
}
