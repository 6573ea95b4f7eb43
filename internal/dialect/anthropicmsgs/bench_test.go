package anthropicmsgs

import (
	"encoding/json"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
)

func metaOf(id, model string) dialect.Meta {
	return dialect.Meta{ID: id, Model: model, Created: 1700000000}
}

// typicalRequest is an agent's second turn, the same conversation as
// openaichat's benchmark in Anthropic's shape: a system prompt, two tools
// with schemas, one parallel tool round trip and sampling options (about
// 2 KB), with members in the order anthropic-sdk-go writes them.
const typicalRequest = `{"max_tokens":512,"messages":[` +
	`{"content":[{"text":"I'm flying to Paris tomorrow morning. What's the weather going to be like, and what time is it there right now?","type":"text"}],"role":"user"},` +
	`{"content":[{"id":"toolu_9f8e7d6c5b4a","input":{"city":"Paris","day":"tomorrow"},"name":"get_weather","type":"tool_use"},` +
	`{"id":"toolu_1a2b3c4d5e6f","input":{"timezone":"Europe/Paris"},"name":"get_time","type":"tool_use"}],"role":"assistant"},` +
	`{"content":[{"tool_use_id":"toolu_9f8e7d6c5b4a","content":[{"text":"{\"forecast\":\"light rain\",\"high_c\":14,\"low_c\":8,\"wind_kph\":18}","type":"text"}],"type":"tool_result"},` +
	`{"tool_use_id":"toolu_1a2b3c4d5e6f","content":[{"text":"{\"time\":\"21:42\",\"utc_offset\":\"+01:00\"}","type":"text"}],"type":"tool_result"}],"role":"user"},` +
	`{"content":[{"text":"Tomorrow Paris expects light rain, 8–14 °C with a moderate wind; it's 21:42 there now.","type":"text"}],"role":"assistant"},` +
	`{"content":[{"text":"Should I bring an umbrella or a raincoat? I'll be walking a lot.","type":"text"}],"role":"user"}],` +
	`"model":"claude-sonnet-4-5","temperature":0.3,"metadata":{"user_id":"user-1234"},` +
	`"system":[{"text":"You are a concise travel assistant. Answer in at most three sentences, use metric units, and call tools whenever live data is needed.","cache_control":{"type":"ephemeral"},"type":"text"}],` +
	`"tool_choice":{"type":"auto"},"tools":[{"input_schema":{"properties":{"city":{"type":"string","description":"City name"},"day":{"type":"string","enum":["today","tomorrow"]}},"required":["city"],"type":"object","additionalProperties":false},"name":"get_weather","description":"Get the weather forecast for a city.","strict":true},` +
	`{"input_schema":{"properties":{"timezone":{"type":"string"}},"required":["timezone"],"type":"object","additionalProperties":false},"name":"get_time","description":"Get the current local time for an IANA timezone.","strict":true}],"stream":true}`

func BenchmarkDecode(b *testing.B) {
	body := []byte(typicalRequest)
	d := New()
	h := hdr()
	if _, p := d.Decode(body, h); p != nil {
		b.Fatal(p)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, p := d.Decode(body, h); p != nil {
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

// BenchmarkStream20 encodes a whole 20-event answer: encoder setup,
// message_start, a text block of 20 deltas, message_delta and message_stop.
func BenchmarkStream20(b *testing.B) {
	d := New()
	req := &canonical.Request{Stream: true, IncludeUsage: true}
	m := metaOf("msg_0123456789abcdef", "claude-sonnet-4-5")
	var evs [20]canonical.Event
	for i := range evs {
		evs[i] = textEv(" token, \"quoted\"")
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
		ToolCalls: []canonical.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris","day":"tomorrow"}`}},
		Stop:      canonical.StopToolUse, Usage: canonical.Usage{InputTokens: 420, OutputTokens: 25}}
	m := metaOf("msg_0123456789abcdef", "claude-sonnet-4-5")
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = d.AppendResponse(buf[:0], m, nil, resp)
	}
}
