package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// Answer is one deployment's whole answer to one case, assembled from its
// stream as the gateway assembles a non-streamed answer.
type Answer struct {
	Text      string
	Refusal   string
	ToolCalls []canonical.ToolCall
	Stop      canonical.StopReason
	Usage     canonical.Usage
}

// Finish is the answer's finish_reason as the gateway's OpenAI Chat
// dialect writes it: a stop sequence, a refusal and a pause all end the
// turn normally ("stop").
func (a *Answer) Finish() string {
	switch a.Stop {
	case canonical.StopMaxTokens, canonical.StopContextWindow:
		return "length"
	case canonical.StopToolUse:
		return "tool_calls"
	case canonical.StopContentFilter:
		return "content_filter"
	}
	return "stop"
}

// Miss is one expectation an answer did not meet: the expectation's name
// (its key in the golden file) and why, in words.
type Miss struct {
	Check string `json:"check"`
	Why   string `json:"why"`
}

// excerptBytes bounds how much of an answer a reason quotes.
const excerptBytes = 160

// Check returns every expectation of c that a does not meet, in the order
// the fields are documented; none means the answer passes.
func (c *Case) Check(a *Answer) []Miss {
	e := &c.Expect
	var ms []Miss
	miss := func(check, format string, args ...any) {
		ms = append(ms, Miss{Check: check, Why: fmt.Sprintf(format, args...)})
	}
	if e.Refusal != nil {
		refused := a.Refusal != "" || a.Stop == canonical.StopRefusal
		switch {
		case *e.Refusal && !refused:
			miss("refusal", "want a refusal, got an answer")
		case !*e.Refusal && refused:
			miss("refusal", "the answer is a refusal: %s", quote(a.Refusal))
		}
	}
	if e.Text != nil && a.Text != *e.Text {
		miss("text", "got %s, want %s%s", quote(a.Text), quote(*e.Text), differsAt(a.Text, *e.Text))
	}
	if e.JSON || e.JSONEquals != nil || c.schema != nil || len(e.Required) > 0 {
		v, err := decodeJSON(a.Text)
		switch {
		case err != nil:
			why := fmt.Sprintf("the answer is not JSON (%v): %s", err, quote(a.Text))
			for _, name := range []string{"json", "json_equals", "schema", "required"} {
				if c.wants(name) {
					miss(name, "%s", why)
				}
			}
		default:
			ms = append(ms, c.checkJSON("", v, e.JSONEquals, c.schema != nil, e.Required)...)
		}
	}
	if t := e.ToolCall; t != nil {
		ms = append(ms, c.checkToolCall(a, t)...)
	}
	if e.FinishReason != "" && a.Finish() != e.FinishReason {
		miss("finish_reason", "got %s, want %s", a.Finish(), e.FinishReason)
	}
	return ms
}

// wants reports whether the answer-JSON expectation name is set.
func (c *Case) wants(name string) bool {
	e := &c.Expect
	switch name {
	case "json":
		return e.JSON
	case "json_equals":
		return e.JSONEquals != nil
	case "schema":
		return c.schema != nil
	case "required":
		return len(e.Required) > 0
	}
	return false
}

// checkJSON checks a decoded JSON value: exact (equals), against the
// case's schema (answer) or tool schema (prefix "tool_call."), and the
// required paths. Check names carry prefix.
func (c *Case) checkJSON(prefix string, v any, equals json.RawMessage, schema bool, required []string) []Miss {
	var ms []Miss
	if equals != nil {
		var want any
		_ = json.Unmarshal(equals, &want) // valid: checked at parse
		if d := firstDiff(v, want, "$"); d != "" {
			name := "json_equals"
			if prefix != "" {
				name = "arguments"
			}
			ms = append(ms, Miss{Check: prefix + name, Why: d})
		}
	}
	if schema {
		rs := c.schema
		if prefix != "" {
			rs = c.toolSchema
		}
		if err := rs.Validate(v); err != nil {
			ms = append(ms, Miss{Check: prefix + "schema", Why: cut(err.Error(), 2*excerptBytes)})
		}
	}
	if len(required) > 0 {
		var missing []string
		for _, p := range required {
			missing = append(missing, absent(v, p)...)
		}
		if len(missing) > 0 {
			ms = append(ms, Miss{Check: prefix + "required", Why: "missing or null: " + cut(strings.Join(missing, ", "), 2*excerptBytes)})
		}
	}
	return ms
}

// checkToolCall checks the first call of the expected tool.
func (c *Case) checkToolCall(a *Answer, t *ToolCallExpect) []Miss {
	for i := range a.ToolCalls {
		tc := &a.ToolCalls[i]
		if tc.Name != t.Name {
			continue
		}
		if t.Arguments == nil && c.toolSchema == nil && len(t.Required) == 0 {
			return nil
		}
		args := tc.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		v, err := decodeJSON(args)
		if _, obj := v.(map[string]any); err != nil || !obj {
			return []Miss{{Check: "tool_call.arguments", Why: "not a JSON object: " + quote(tc.Arguments)}}
		}
		return c.checkJSON("tool_call.", v, t.Arguments, c.toolSchema != nil, t.Required)
	}
	names := make([]string, len(a.ToolCalls))
	for i := range a.ToolCalls {
		names[i] = a.ToolCalls[i].Name
	}
	got := "no tool call"
	if len(names) > 0 {
		got = "calls of " + strings.Join(names, ", ")
	}
	return []Miss{{Check: "tool_call.name", Why: fmt.Sprintf("no call of %s (%s)", t.Name, got)}}
}

// decodeJSON decodes exactly one JSON value.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s", jsonError(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("text after the JSON value")
	}
	return v, nil
}

// firstDiff describes the first place got and want differ ("" if none),
// by a path from "$": "$.items[0].sku: got "x", want "y"".
func firstDiff(got, want any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, gok := g[k]
			wv, wok := w[k]
			p := path + "." + k
			switch {
			case !gok:
				return p + ": missing, want " + compact(wv)
			case !wok:
				return p + ": not expected, got " + compact(gv)
			}
			if d := firstDiff(gv, wv, p); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		for i := range min(len(g), len(w)) {
			if d := firstDiff(g[i], w[i], path+"["+strconv.Itoa(i)+"]"); d != "" {
				return d
			}
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: %d items, want %d", path, len(g), len(w))
		}
		return ""
	}
	if reflect.DeepEqual(got, want) {
		return ""
	}
	return path + ": got " + compact(got) + ", want " + compact(want)
}

// absent lists the places path is missing or null in v; [] steps into
// every element of an array (and an array that is not there is missing).
func absent(v any, path string) []string {
	var out []string
	var walk func(v any, segs []string, at string)
	walk = func(v any, segs []string, at string) {
		if len(segs) == 0 {
			if v == nil {
				out = append(out, at)
			}
			return
		}
		name, each := strings.CutSuffix(segs[0], "[]")
		m, _ := v.(map[string]any)
		child, ok := m[name]
		here := name
		if at != "" {
			here = at + "." + name
		}
		if !ok || child == nil {
			out = append(out, here)
			return
		}
		if !each {
			walk(child, segs[1:], here)
			return
		}
		items, ok := child.([]any)
		if !ok {
			out = append(out, here+" (not an array)")
			return
		}
		for i, it := range items {
			walk(it, segs[1:], here+"["+strconv.Itoa(i)+"]")
		}
	}
	walk(v, strings.Split(path, "."), "")
	return out
}

// compact is a JSON value's compact text, cut to the excerpt bound.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) == nil {
		b = buf.Bytes()
	}
	return cut(string(b), excerptBytes)
}

// quote is s quoted, cut to the excerpt bound.
func quote(s string) string {
	if len(s) <= excerptBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, excerptBytes)) + fmt.Sprintf(" (%d bytes)", len(s))
}

// cut shortens s to at most n bytes without splitting a rune, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// differsAt says where two different texts part, when both are long
// enough for that to help.
func differsAt(got, want string) string {
	if len(got) <= 40 && len(want) <= 40 {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf(" (they differ from byte %d)", i)
}
