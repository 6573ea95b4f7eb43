package quality

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
)

const policySchema = `{"type":"object","additionalProperties":false,"required":["insured","coverage"],
 "properties":{"insured":{"type":"string"},
  "coverage":{"type":"object","properties":{"effective_date":{"type":"string"},"limit":{"type":"integer"}}},
  "items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}}}},
  "kind":{"type":"string","enum":["auto","home"]}}}`

func structured(schema string) *canonical.Request {
	rf := &canonical.ResponseFormat{Type: canonical.FormatJSONObject}
	if schema != "" {
		rf = &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: json.RawMessage(schema)}
	}
	return &canonical.Request{Model: "m", ResponseFormat: rf}
}

func fieldsOf(s Sample) string {
	var b []string
	for _, f := range s.Fields {
		b = append(b, fmt.Sprintf("%s=%v", f.Path, f.Populated))
	}
	return strings.Join(b, " ")
}

func TestExtract(t *testing.T) {
	weather := &canonical.Request{Model: "m", Tools: []canonical.Tool{{Name: "weather",
		Parameters: json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)}}}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	var many strings.Builder
	many.WriteString("{")
	for i := range 5000 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"f%04d":%d`, i, i)
	}
	many.WriteString("}")
	var manySchema strings.Builder
	manySchema.WriteString(`{"type":"object","properties":{`)
	for i := range 1000 {
		if i > 0 {
			manySchema.WriteString(",")
		}
		fmt.Fprintf(&manySchema, `"f%04d":{"type":"integer"}`, i)
	}
	manySchema.WriteString("}}")
	tests := []struct {
		name string
		req  *canonical.Request
		resp canonical.Response
		want Sample
		// fields is the wanted fieldsOf (when the want has Fields unset).
		fields string
	}{
		// Unhappy paths first.
		{name: "invalid JSON", req: structured(policySchema), resp: canonical.Response{Text: `{"insured": "x"`, Stop: canonical.StopEnd},
			want: Sample{Structured: true, Measured: true, Schema: true, Length: 15, Stop: canonical.StopEnd}},
		{name: "invalid UTF-8", req: structured(""), resp: canonical.Response{Text: "{\"a\":\"\xff\xfe\"}", Stop: canonical.StopEnd},
			want: Sample{Structured: true, Measured: true, Length: 10, Stop: canonical.StopEnd}},
		{name: "fenced JSON is not JSON", req: structured(""), resp: canonical.Response{Text: "```json\n{}\n```", Stop: canonical.StopEnd},
			want: Sample{Structured: true, Measured: true, Length: 14, Stop: canonical.StopEnd}},
		{name: "too deep to parse", req: structured(""), resp: canonical.Response{Text: deep, Stop: canonical.StopEnd},
			want: Sample{Structured: true, Measured: true, Length: 40000, Stop: canonical.StopEnd}},
		{name: "too long to parse", req: structured(""), resp: canonical.Response{Text: strings.Repeat(" ", MaxJSONBytes+1), Stop: canonical.StopEnd},
			want: Sample{Structured: true, Length: MaxJSONBytes + 1, Stop: canonical.StopEnd}},
		{name: "thousands of fields, schema of thousands: 24 paths", req: structured(manySchema.String()), resp: canonical.Response{Text: many.String(), Stop: canonical.StopEnd},
			want:   Sample{Structured: true, Measured: true, JSONValid: true, Schema: true, SchemaValid: true, Length: len(many.String()), Stop: canonical.StopEnd},
			fields: "f0000=true f0001=true f0002=true f0003=true f0004=true f0005=true f0006=true f0007=true f0008=true f0009=true f0010=true f0011=true f0012=true f0013=true f0014=true f0015=true f0016=true f0017=true f0018=true f0019=true f0020=true f0021=true f0022=true f0023=true"},
		{name: "hostile deep schema: read to a bounded depth", req: structured(`{"type":"object","properties":` + strings.Repeat(`{"a":{"type":"object","properties":`, 100) + "{}" + strings.Repeat("}}", 100) + "}"),
			resp:   canonical.Response{Text: `{}`, Stop: canonical.StopEnd},
			want:   Sample{Structured: true, Measured: true, JSONValid: true, Schema: true, SchemaValid: true, Length: 2, Stop: canonical.StopEnd},
			fields: "a=false"},
		{name: "schema too large is not compiled", req: structured(`{"type":"object","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`),
			resp: canonical.Response{Text: `{}`, Stop: canonical.StopEnd},
			want: Sample{Structured: true, Measured: true, JSONValid: true, Length: 2, Stop: canonical.StopEnd}},
		{name: "schema violation: missing required, extra field, bad enum", req: structured(policySchema),
			resp:   canonical.Response{Text: `{"insured":"x","kind":"boat","extra":1}`, Stop: canonical.StopEnd},
			want:   Sample{Structured: true, Measured: true, JSONValid: true, Schema: true, Length: 39, Stop: canonical.StopEnd},
			fields: "coverage=false insured=true items=false kind=true"},
		{name: "refusal", req: structured(policySchema), resp: canonical.Response{Refusal: "no", Stop: canonical.StopRefusal},
			want: Sample{Refusal: true, Length: 2, Stop: canonical.StopRefusal}},
		{name: "empty", req: &canonical.Request{}, resp: canonical.Response{Stop: canonical.StopEnd},
			want: Sample{Empty: true, Stop: canonical.StopEnd}},
		{name: "truncated", req: &canonical.Request{}, resp: canonical.Response{Text: "abc", Stop: canonical.StopMaxTokens},
			want: Sample{Truncated: true, Length: 3, Stop: canonical.StopMaxTokens}},
		{name: "tool args not JSON", req: weather, resp: canonical.Response{ToolCalls: []canonical.ToolCall{{Name: "weather", Arguments: `{"city":`}}, Stop: canonical.StopToolUse},
			want: Sample{ToolsOffered: true, ToolCall: true, ToolArgsChecked: true, Length: 8, Stop: canonical.StopToolUse}},
		{name: "tool args miss a required parameter", req: weather, resp: canonical.Response{ToolCalls: []canonical.ToolCall{{Name: "weather", Arguments: `{"town":"x"}`}}, Stop: canonical.StopToolUse},
			want: Sample{ToolsOffered: true, ToolCall: true, ToolArgsChecked: true, Length: 12, Stop: canonical.StopToolUse}},
		{name: "tool args too long are not read", req: weather, resp: canonical.Response{ToolCalls: []canonical.ToolCall{{Name: "weather", Arguments: strings.Repeat("x", MaxToolArgsBytes+1)}}, Stop: canonical.StopToolUse},
			want: Sample{ToolsOffered: true, ToolCall: true, Length: MaxToolArgsBytes + 1, Stop: canonical.StopToolUse}},
		// Happy paths.
		{name: "tool args valid", req: weather, resp: canonical.Response{ToolCalls: []canonical.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}, Stop: canonical.StopToolUse},
			want: Sample{ToolsOffered: true, ToolCall: true, ToolArgsChecked: true, ToolArgsValid: true, Length: 16, Stop: canonical.StopToolUse}},
		{name: "tools offered, none called", req: weather, resp: canonical.Response{Text: "hi", Stop: canonical.StopEnd},
			want: Sample{ToolsOffered: true, Length: 2, Stop: canonical.StopEnd}},
		{name: "json_object valid", req: structured(""), resp: canonical.Response{Text: ` {"a":1} `, Stop: canonical.StopEnd},
			want: Sample{Structured: true, Measured: true, JSONValid: true, Length: 9, Stop: canonical.StopEnd}},
		{name: "schema conforms; nested and array paths", req: structured(policySchema),
			resp:   canonical.Response{Text: `{"insured":"x","coverage":{"effective_date":"2025-01-01","limit":null},"items":[{"name":"a"},{"name":""}],"kind":"auto"}`, Stop: canonical.StopEnd},
			want:   Sample{Structured: true, Measured: true, JSONValid: true, Schema: true, SchemaValid: false, Length: 120, Stop: canonical.StopEnd},
			fields: "coverage=true coverage.effective_date=true coverage.limit=false insured=true items=true items[].name=false kind=true"},
		{name: "flattened: the nested field moved up", req: structured(`{"type":"object","properties":{"coverage":{"type":"object","properties":{"effective_date":{"type":"string"}}}}}`),
			resp:   canonical.Response{Text: `{"coverage":{},"effective_date":"2025-01-01"}`, Stop: canonical.StopEnd},
			want:   Sample{Structured: true, Measured: true, JSONValid: true, Schema: true, SchemaValid: true, Length: 45, Stop: canonical.StopEnd},
			fields: "coverage=false coverage.effective_date=false"},
	}
	mon := NewMonitor(nil, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := FromResponse(&tc.resp)
			start := time.Now()
			got := Extract(tc.req, &a)
			if d := time.Since(start); d > time.Second {
				t.Errorf("extraction took %v", d)
			}
			if f := fieldsOf(got); f != tc.fields {
				t.Errorf("fields %q, want %q", f, tc.fields)
			}
			got.Fields = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sample\n got %+v\nwant %+v", got, tc.want)
			}
			// With compiled schemas kept, twice: the same.
			for range 2 {
				if c := mon.Extract(tc.req, &a); fieldsOf(c) != tc.fields {
					t.Errorf("cached: fields %q, want %q", fieldsOf(c), tc.fields)
				}
			}
			// A stream's tap sees the same answer.
			var tap Tap
			feed(&tap, tc.req, &tc.resp)
			sa := tap.Answer(tc.resp.Stop)
			st := Extract(tc.req, &sa)
			if f := fieldsOf(st); f != tc.fields {
				t.Errorf("streamed fields %q, want %q", f, tc.fields)
			}
			st.Fields = nil
			if !reflect.DeepEqual(st, tc.want) {
				t.Errorf("streamed sample\n got %+v\nwant %+v", st, tc.want)
			}
		})
	}
}

// feed streams resp through a tap in small deltas.
func feed(tap *Tap, req *canonical.Request, resp *canonical.Response) {
	for _, c := range slices.Collect(chunks(resp.Text, 7)) {
		tap.Event(req, &canonical.Event{Kind: canonical.EventTextDelta, Text: c})
	}
	for _, c := range slices.Collect(chunks(resp.Refusal, 7)) {
		tap.Event(req, &canonical.Event{Kind: canonical.EventRefusalDelta, Text: c})
	}
	for i, tc := range resp.ToolCalls {
		tap.Event(req, &canonical.Event{Kind: canonical.EventToolCallStart, Index: i, Name: tc.Name})
		for _, c := range slices.Collect(chunks(tc.Arguments, 7)) {
			tap.Event(req, &canonical.Event{Kind: canonical.EventToolCallDelta, Index: i, Text: c})
		}
	}
}

func chunks(s string, n int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

// A hostile tap: deltas for calls never started, a flood of calls.
func TestTapBounds(t *testing.T) {
	var tap Tap
	req := &canonical.Request{}
	tap.Event(req, &canonical.Event{Kind: canonical.EventToolCallDelta, Index: 3, Text: "x"})
	tap.Event(req, &canonical.Event{Kind: canonical.EventToolCallDelta, Index: -1, Text: "x"})
	for i := range 1000 {
		tap.Event(req, &canonical.Event{Kind: canonical.EventToolCallStart, Index: i, Name: "t"})
		tap.Event(req, &canonical.Event{Kind: canonical.EventToolCallDelta, Index: i, Text: "{}"})
		tap.Event(req, &canonical.Event{Kind: canonical.EventTextDelta, Text: "plain text is counted, not kept"})
	}
	a := tap.Answer(canonical.StopToolUse)
	if len(a.Tools) != MaxToolCalls || a.ToolCalls != 1000 || a.Text != nil || a.TextBytes != 31000 {
		t.Fatalf("tools %d of %d, text kept %d bytes of %d", len(a.Tools), a.ToolCalls, len(a.Text), a.TextBytes)
	}
}

func TestLengthBuckets(t *testing.T) {
	prev := -1
	for n := range 5000 {
		b := bucket(n)
		if b < prev || n > upper(b) || (b > 0 && n <= upper(b-1) && upper(b-1) >= 0 && bucket(upper(b-1)) == b-1 && n <= upper(b-1)) {
			t.Fatalf("n=%d: bucket %d (upper %d), previous bucket %d", n, b, upper(b), prev)
		}
		prev = b
	}
	if b := bucket(1 << 40); b >= lengthBuckets {
		t.Fatalf("bucket %d out of range", b)
	}
	var l Lengths
	for n := 1; n <= 1000; n++ {
		l.Add(n)
	}
	if p50 := l.Quantile(0.5); p50 < 500 || p50 > 600 {
		t.Fatalf("p50 %d, want about 500", p50)
	}
}

// BenchmarkExtract is the hot-path cost of one answer's signals: a plain
// text answer, and a structured one checked against its schema.
func BenchmarkExtract(b *testing.B) {
	text := &canonical.Response{Text: strings.Repeat("lorem ipsum ", 40), Stop: canonical.StopEnd}
	js := &canonical.Response{Text: `{"insured":"x","coverage":{"effective_date":"2025-01-01","limit":1000},"items":[{"name":"a"},{"name":"b"}],"kind":"auto"}`, Stop: canonical.StopEnd}
	for _, bc := range []struct {
		name string
		req  *canonical.Request
		resp *canonical.Response
	}{{"text", &canonical.Request{}, text}, {"json_schema", structured(policySchema), js}} {
		m := NewMonitor(nil, nil)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a := FromResponse(bc.resp)
				_ = m.Extract(bc.req, &a)
			}
		})
	}
}

func TestObserveUnknownDeployment(t *testing.T) {
	m := NewMonitor(nil, nil)
	s := Sample{Length: 3}
	m.Observe(nil, "x", &s)
	m.Observe(testSnapshot(t, ""), "not-configured", &s)
	if rep := m.Report(); len(rep.Deployments) != 0 {
		t.Fatalf("kept %+v", rep.Deployments)
	}
}
