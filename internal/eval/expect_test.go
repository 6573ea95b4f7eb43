package eval

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// Every expectation that an answer misses is reported under its own name,
// with why; an answer that meets them all has no misses.
func TestCheck(t *testing.T) {
	const invoiceReq = `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"vendor":{"type":"string"},"lines":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}}},"required":["vendor","lines"]}}}}`
	tool := func(args string) []canonical.ToolCall {
		return []canonical.ToolCall{{ID: "c1", Name: "get_weather", Arguments: args}}
	}
	tests := []struct {
		name   string
		req    string
		expect string
		answer Answer
		want   []Miss // Why is a substring
	}{
		{name: "exact text", req: chatReq, expect: `{"text":"mock","finish_reason":"length"}`,
			answer: Answer{Text: "mock", Stop: canonical.StopMaxTokens}},
		{name: "other text", req: chatReq, expect: `{"text":"mock"}`, answer: Answer{Text: "Mock."},
			want: []Miss{{"text", `got "Mock.", want "mock"`}}},
		{name: "long texts say where they part", req: chatReq, expect: `{"text":"` + strings.Repeat("a", 50) + `"}`, answer: Answer{Text: strings.Repeat("a", 45) + "b"},
			want: []Miss{{"text", "(they differ from byte 45)"}}},
		{name: "finish reason", req: chatReq, expect: `{"finish_reason":"stop"}`, answer: Answer{Text: "x", Stop: canonical.StopMaxTokens},
			want: []Miss{{"finish_reason", "got length, want stop"}}},
		{name: "stop sequence and refusal end as stop", req: chatReq, expect: `{"finish_reason":"stop"}`, answer: Answer{Text: "x", Stop: canonical.StopSequence}},
		{name: "unexpected refusal", req: chatReq, expect: `{"refusal":false}`, answer: Answer{Refusal: "I can't.", Stop: canonical.StopRefusal},
			want: []Miss{{"refusal", `the answer is a refusal: "I can't."`}}},
		{name: "expected refusal", req: chatReq, expect: `{"refusal":true}`, answer: Answer{Text: "sure"},
			want: []Miss{{"refusal", "want a refusal, got an answer"}}},
		{name: "not JSON fails every JSON expectation", req: schemaReq, expect: `{"json":true,"json_equals":{"a":1},"schema":"request","required":["a"]}`,
			answer: Answer{Text: "Here you go: {\"a\":1}"},
			want:   []Miss{{"json", "not JSON"}, {"json_equals", "not JSON"}, {"schema", "not JSON"}, {"required", "not JSON"}}},
		{name: "trailing text after the JSON", req: chatReq, expect: `{"json":true}`, answer: Answer{Text: `{"a":1} thanks`},
			want: []Miss{{"json", "text after the JSON value"}}},
		{name: "json equals, key order and spacing aside", req: chatReq, expect: `{"json_equals":{"a":1,"b":[true,null]}}`, answer: Answer{Text: `{ "b": [true, null], "a": 1.0 }`}},
		{name: "json differs", req: chatReq, expect: `{"json_equals":{"a":{"b":[1,2]}}}`, answer: Answer{Text: `{"a":{"b":[1,3]}}`},
			want: []Miss{{"json_equals", "$.a.b[1]: got 3, want 2"}}},
		{name: "json has an extra field", req: chatReq, expect: `{"json_equals":{"a":1}}`, answer: Answer{Text: `{"a":1,"z":2}`},
			want: []Miss{{"json_equals", "$.z: not expected, got 2"}}},
		{name: "json lacks a field", req: chatReq, expect: `{"json_equals":{"a":1,"b":2}}`, answer: Answer{Text: `{"a":1}`},
			want: []Miss{{"json_equals", "$.b: missing, want 2"}}},
		{name: "schema met", req: invoiceReq, expect: `{"schema":"request","required":["vendor","lines[].sku"]}`, answer: Answer{Text: `{"vendor":"v","lines":[{"sku":"a"},{"sku":"b"}]}`}},
		{name: "schema missed", req: invoiceReq, expect: `{"schema":"request"}`, answer: Answer{Text: `{"vendor":"v","lines":[{"qty":1}]}`},
			want: []Miss{{"schema", "sku"}}},
		{name: "explicit schema", req: chatReq, expect: `{"schema":{"type":"array","maxItems":1}}`, answer: Answer{Text: `[1,2]`},
			want: []Miss{{"schema", ""}}},
		{name: "required paths missing or null", req: chatReq, expect: `{"required":["vendor","lines[].sku","total.amount"]}`,
			answer: Answer{Text: `{"vendor":null,"lines":[{"sku":"a"},{"qty":1}],"total":{}}`},
			want:   []Miss{{"required", "missing or null: vendor, lines[1].sku, total.amount"}}},
		{name: "required array that is not one", req: chatReq, expect: `{"required":["lines[].sku"]}`, answer: Answer{Text: `{"lines":{"sku":"a"}}`},
			want: []Miss{{"required", "lines (not an array)"}}},
		{name: "tool call met", req: toolReq, expect: `{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"},"schema":"request","required":["city"]},"finish_reason":"tool_calls"}`,
			answer: Answer{ToolCalls: tool(`{"city": "Paris"}`), Stop: canonical.StopToolUse}},
		{name: "no tool call", req: toolReq, expect: `{"tool_call":{"name":"get_weather"}}`, answer: Answer{Text: "It is sunny."},
			want: []Miss{{"tool_call.name", "no call of get_weather (no tool call)"}}},
		{name: "another tool called", req: toolReq, expect: `{"tool_call":{"name":"get_weather"}}`, answer: Answer{ToolCalls: []canonical.ToolCall{{Name: "get_time", Arguments: "{}"}}},
			want: []Miss{{"tool_call.name", "no call of get_weather (calls of get_time)"}}},
		{name: "tool arguments of another shape", req: toolReq, expect: `{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"},"schema":"request","required":["city"]}}`,
			answer: Answer{ToolCalls: tool(`{"town":"Paris"}`)},
			want:   []Miss{{"tool_call.arguments", "$.city: missing"}, {"tool_call.schema", "city"}, {"tool_call.required", "missing or null: city"}}},
		{name: "tool arguments not JSON", req: toolReq, expect: `{"tool_call":{"name":"get_weather","schema":"request"}}`, answer: Answer{ToolCalls: tool(`{"city":`)},
			want: []Miss{{"tool_call.arguments", "not a JSON object"}}},
		{name: "empty tool arguments are an empty object", req: toolReq, expect: `{"tool_call":{"name":"get_weather","arguments":{}}}`, answer: Answer{ToolCalls: tool(``)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCase([]byte(goldenLine("c", tc.req, tc.expect)))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Check(&tc.answer)
			if len(got) != len(tc.want) {
				t.Fatalf("misses %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Check != w.Check || !strings.Contains(got[i].Why, w.Why) {
					t.Errorf("miss %d: %+v, want %s containing %q", i, got[i], w.Check, w.Why)
				}
			}
		})
	}
}

// A reason quotes a bounded excerpt of a long answer.
func TestCheckQuotesBounded(t *testing.T) {
	c, err := parseCase([]byte(goldenLine("c", chatReq, `{"text":"a"}`)))
	if err != nil {
		t.Fatal(err)
	}
	ms := c.Check(&Answer{Text: strings.Repeat("é", 100_000)})
	if len(ms) != 1 || len(ms[0].Why) > 4*excerptBytes || !strings.Contains(ms[0].Why, "(200000 bytes)") {
		t.Errorf("%d bytes: %.300s", len(ms[0].Why), ms[0].Why)
	}
}
