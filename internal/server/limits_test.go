package server_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Floods of tools and tool-call ids in every dialect: refused with the
// bound named, in linear time (an 80,000-tool body took 15 s of CPU
// before the checks used maps).
func TestListFloods(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) { c.Server.MaxBodyBytes = 16 << 20 }, rungSpec{"primary", "openai"})
	tools := func(n int, one func(i int) string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(one(i))
		}
		return b.String()
	}
	const n = 40000
	chatCalls := tools(n, func(i int) string {
		return `{"id":"c` + strconv.Itoa(i) + `","type":"function","function":{"name":"f","arguments":"{}"}}`
	})
	chatResults := tools(n, func(i int) string { return `{"role":"tool","tool_call_id":"c` + strconv.Itoa(i) + `","content":"r"}` })
	anCalls := tools(n, func(i int) string { return `{"type":"tool_use","id":"t` + strconv.Itoa(i) + `","name":"f","input":{}}` })
	anResults := tools(n, func(i int) string {
		return `{"type":"tool_result","tool_use_id":"t` + strconv.Itoa(i) + `","content":"r"}`
	})
	respCalls := tools(n, func(i int) string {
		return `{"type":"function_call","call_id":"c` + strconv.Itoa(i) + `","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c` + strconv.Itoa(i) + `","output":"r"}`
	})
	for _, tc := range []struct {
		name, path, body, param string
	}{
		{"chat: 80,000 tools", "/v1/chat/completions", `{"model":"` + publicModel + `","messages":[{"role":"user","content":"x"}],"tools":[` +
			tools(80000, func(i int) string { return `{"type":"function","function":{"name":"f` + strconv.Itoa(i) + `"}}` }) + `]}`, "tools"},
		{"anthropic: 80,000 tools", "/v1/messages", `{"model":"` + publicModel + `","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[` +
			tools(80000, func(i int) string { return `{"name":"f` + strconv.Itoa(i) + `","input_schema":{"type":"object"}}` }) + `]}`, "tools"},
		{"responses: 80,000 tools", "/v1/responses", `{"model":"` + publicModel + `","input":"x","tools":[` +
			tools(80000, func(i int) string {
				return `{"type":"function","name":"f` + strconv.Itoa(i) + `","parameters":{"type":"object"}}`
			}) + `]}`, "tools"},
		{"chat: 40,000 tool calls", "/v1/chat/completions", `{"model":"` + publicModel + `","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[` +
			chatCalls + `]},` + chatResults + `],"tools":[{"type":"function","function":{"name":"f"}}]}`, "messages"},
		{"anthropic: 40,000 tool calls", "/v1/messages", `{"model":"` + publicModel + `","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[` +
			anCalls + `]},{"role":"user","content":[` + anResults + `]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`, "messages"},
		{"responses: 40,000 tool calls", "/v1/responses", `{"model":"` + publicModel + `","input":[{"role":"user","content":"x"},` + respCalls +
			`],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`, "messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			resp, err := h.post(tc.path, tc.body, "anthropic-version", "2023-06-01")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct {
				Error struct{ Code, Param string } `json:"error"`
			}
			_ = json.Unmarshal(b, &e)
			if resp.StatusCode != 400 || e.Error.Code != "request_too_large" || e.Error.Param != tc.param {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			// A bound on the order of magnitude, not a benchmark (see
			// BenchmarkDecodeTools): quadratic work took seconds.
			if took := time.Since(begin); took > 3*time.Second {
				t.Errorf("answered after %v", took)
			}
			if c := h.counts(); c["primary"] != 0 {
				t.Errorf("reached the provider: %v", c)
			}
		})
	}
}
