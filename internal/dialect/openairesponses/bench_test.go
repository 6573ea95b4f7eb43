package openairesponses

import (
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
)

// typicalRequest is an agent's second turn in Responses form: instructions,
// two tools with schemas, one parallel tool round trip sent back whole (the
// stateless way) and sampling options (about 2 KB), the same conversation
// as openaichat's benchmark.
const typicalRequest = `{"model":"gpt-4.1","instructions":"You are a concise travel assistant. Answer in at most three sentences, use metric units, and call tools whenever live data is needed.","input":[` +
	`{"role":"user","content":"I'm flying to Paris tomorrow morning. What's the weather going to be like, and what time is it there right now?"},` +
	`{"type":"function_call","call_id":"call_9f8e7d6c5b4a","name":"get_weather","arguments":"{\"city\":\"Paris\",\"day\":\"tomorrow\"}"},` +
	`{"type":"function_call","call_id":"call_1a2b3c4d5e6f","name":"get_time","arguments":"{\"timezone\":\"Europe/Paris\"}"},` +
	`{"type":"function_call_output","call_id":"call_9f8e7d6c5b4a","output":"{\"forecast\":\"light rain\",\"high_c\":14,\"low_c\":8,\"wind_kph\":18}"},` +
	`{"type":"function_call_output","call_id":"call_1a2b3c4d5e6f","output":"{\"time\":\"21:42\",\"utc_offset\":\"+01:00\"}"},` +
	`{"id":"msg_abc","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Tomorrow Paris expects light rain, 8–14 °C with a moderate wind; it's 21:42 there now."}]},` +
	`{"role":"user","content":"Should I bring an umbrella or a raincoat? I'll be walking a lot."}],` +
	`"tools":[{"type":"function","name":"get_weather","description":"Get the weather forecast for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"day":{"type":"string","enum":["today","tomorrow"]}},"required":["city"],"additionalProperties":false},"strict":true},` +
	`{"type":"function","name":"get_time","description":"Get the current local time for an IANA timezone.","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"],"additionalProperties":false},"strict":true}],` +
	`"tool_choice":"auto","parallel_tool_calls":true,"temperature":0.3,"max_output_tokens":512,"stream":true,"store":false,"user":"user-1234"}`

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

func benchMeta() dialect.Meta {
	return dialect.Meta{ID: "resp_0123456789abcdef01234567", Model: "gpt-4.1", Created: 1700000000}
}

// BenchmarkStream20 encodes a whole 20-event answer: encoder setup,
// response.created and in_progress, the item and part openings, 20 text
// deltas, the .done events, and response.completed with usage.
func BenchmarkStream20(b *testing.B) {
	d := New()
	req := &canonical.Request{Stream: true, Temperature: new(0.3), MaxTokens: 512}
	m := benchMeta()
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

// BenchmarkStream20Tools is the same size of answer as two parallel tool
// calls with streamed arguments.
func BenchmarkStream20Tools(b *testing.B) {
	d := New()
	req := &canonical.Request{Stream: true}
	m := benchMeta()
	evs := []canonical.Event{toolStart(0, "call_1", "get_weather")}
	for range 9 {
		evs = append(evs, toolArgs(0, `"city":"Paris",`))
	}
	evs = append(evs, toolStart(1, "call_2", "get_time"))
	for range 9 {
		evs = append(evs, toolArgs(1, `"tz":"Europe/Rome",`))
	}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		enc := d.NewEncoder(m, req)
		buf = enc.Start(buf[:0])
		for i := range evs {
			buf = enc.Event(buf[:0], &evs[i])
		}
		buf = enc.Finish(buf[:0], canonical.StopToolUse, "", canonical.Usage{InputTokens: 100, OutputTokens: 20})
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	d := New()
	req := &canonical.Request{Temperature: new(0.3), MaxTokens: 512}
	resp := &canonical.Response{Text: "Bring a compact umbrella: light rain and 18 km/h wind make a raincoat useful too.",
		Stop: canonical.StopEnd, Usage: canonical.Usage{InputTokens: 420, OutputTokens: 25}}
	m := benchMeta()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = d.AppendResponse(buf[:0], m, req, resp)
	}
}
