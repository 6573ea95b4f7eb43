package openaichat

import (
	"encoding/json"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
)

func metaOf(id, model string) dialect.Meta {
	return dialect.Meta{ID: id, Model: model, Created: 1700000000}
}

// typicalRequest is an agent's second turn: a system prompt, two tools with
// schemas, one tool round trip and sampling options (about 2 KB).
const typicalRequest = `{"model":"gpt-4o","messages":[` +
	`{"role":"system","content":"You are a concise travel assistant. Answer in at most three sentences, use metric units, and call tools whenever live data is needed."},` +
	`{"role":"user","content":"I'm flying to Paris tomorrow morning. What's the weather going to be like, and what time is it there right now?"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_9f8e7d6c5b4a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"day\":\"tomorrow\"}"}},` +
	`{"id":"call_1a2b3c4d5e6f","type":"function","function":{"name":"get_time","arguments":"{\"timezone\":\"Europe/Paris\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_9f8e7d6c5b4a","content":"{\"forecast\":\"light rain\",\"high_c\":14,\"low_c\":8,\"wind_kph\":18}"},` +
	`{"role":"tool","tool_call_id":"call_1a2b3c4d5e6f","content":"{\"time\":\"21:42\",\"utc_offset\":\"+01:00\"}"},` +
	`{"role":"assistant","content":"Tomorrow Paris expects light rain, 8–14 °C with a moderate wind; it's 21:42 there now."},` +
	`{"role":"user","content":"Should I bring an umbrella or a raincoat? I'll be walking a lot."}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather forecast for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"day":{"type":"string","enum":["today","tomorrow"]}},"required":["city"],"additionalProperties":false},"strict":true}},` +
	`{"type":"function","function":{"name":"get_time","description":"Get the current local time for an IANA timezone.","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"],"additionalProperties":false},"strict":true}}],` +
	`"tool_choice":"auto","parallel_tool_calls":true,"temperature":0.3,"max_completion_tokens":512,"stream":true,"stream_options":{"include_usage":true},"user":"user-1234"}`

func BenchmarkDecode(b *testing.B) {
	body := []byte(typicalRequest)
	d := New()
	if _, p := d.Decode(body, nil); p != nil {
		b.Fatal(p)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, p := d.Decode(body, nil); p != nil {
			b.Fatal(p)
		}
	}
}

// BenchmarkJSONValidBaseline is the floor for comparison: encoding/json
// merely validating the same body, building nothing.
func BenchmarkJSONValidBaseline(b *testing.B) {
	body := []byte(typicalRequest)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkStream20 encodes a whole 20-event answer with usage: encoder
// setup, role chunk, 20 text deltas, finish, usage chunk and [DONE].
func BenchmarkStream20(b *testing.B) {
	d := New()
	req := &canonical.Request{Stream: true, IncludeUsage: true}
	m := metaOf("chatcmpl-0123456789abcdef", "gpt-4o")
	var evs [20]canonical.Event
	for i := range evs {
		evs[i] = text(" token, \"quoted\"")
	}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		enc := d.NewEncoder(m, req)
		buf = enc.Start(buf[:0])
		for i := range evs {
			// The engine writes and flushes per event; reuse the buffer so.
			buf = enc.Event(buf[:0], &evs[i])
		}
		buf = enc.Finish(buf[:0], canonical.StopEnd, "", canonical.Usage{InputTokens: 100, OutputTokens: 20})
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	d := New()
	resp := &canonical.Response{Text: "Bring a compact umbrella: light rain and 18 km/h wind make a raincoat useful too.",
		Stop: canonical.StopEnd, Usage: canonical.Usage{InputTokens: 420, OutputTokens: 25}}
	m := metaOf("chatcmpl-0123456789abcdef", "gpt-4o")
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = d.AppendResponse(buf[:0], m, nil, resp)
	}
}
