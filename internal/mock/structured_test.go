package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Structured output on the wire, for every format: the answer is the
// schema's instance, whole, as text (streamed in deltas of at most 4
// bytes, usage = deltas), cut only by the request's max tokens.

// soReq is one structured-output request, rendered by each format.
type soReq struct {
	schema    string // JSON Schema; "" for none
	maxTokens int    // 0: the format's default (unlimited where it can be)
	stop      string // a stop sequence, "" for none
	tools     bool   // declare a get_weather tool
}

// soAnswer is what a client gathers from an answer.
type soAnswer struct {
	status int
	text   string
	deltas []string // content deltas (streams only)
	usage  int      // output tokens
	stop   string
	calls  int
	body   []byte
}

// soWire drives one format by raw HTTP.
type soWire struct {
	kind string
	stop map[stopKind]string // the format's names of the stop reasons
	send func(t *testing.T, srv *httptest.Server, r soReq, stream bool, fault string) soAnswer
}

var soWires = []soWire{
	{kind: "openai", stop: map[stopKind]string{stopEnd: "stop", stopLength: "length", stopTool: "tool_calls", stopRefusal: "stop"}, send: soOpenAI},
	{kind: "anthropic", stop: map[stopKind]string{stopEnd: "end_turn", stopLength: "max_tokens", stopTool: "tool_use", stopRefusal: "refusal"}, send: soAnthropic},
	{kind: "gemini", stop: map[stopKind]string{stopEnd: "STOP", stopLength: "MAX_TOKENS", stopTool: "STOP", stopRefusal: "SAFETY"}, send: soGemini},
	{kind: "bedrock", stop: map[stopKind]string{stopEnd: "end_turn", stopLength: "max_tokens", stopTool: "tool_use", stopRefusal: "guardrail_intervened"}, send: soBedrock},
}

func soOpenAI(t *testing.T, srv *httptest.Server, r soReq, stream bool, fault string) soAnswer {
	var extra []string
	if r.schema != "" {
		extra = append(extra, `"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":`+r.schema+`}}`)
	}
	if r.maxTokens > 0 {
		extra = append(extra, fmt.Sprintf(`"max_completion_tokens":%d`, r.maxTokens))
	}
	if r.stop != "" {
		extra = append(extra, `"stop":`+jsonText(r.stop))
	}
	if r.tools {
		extra = append(extra, toolsField("openai", "get_weather"))
	}
	res := exchange(t, srv, "openai", reqBody("openai", stream, strings.Join(extra, ",")), "X-Mock-Fault", fault)
	a := soAnswer{status: res.status, body: res.body}
	if res.status != 200 {
		return a
	}
	if stream {
		evs, err := events(res.body)
		if err != nil {
			t.Fatal(err)
		}
		st := countStream(t, "openai", evs)
		a.deltas, a.usage, a.stop = st.deltas, st.usageOut, st.stop
		for _, ev := range evs {
			var ch struct {
				Choices []struct {
					Delta struct {
						Content   *string `json:"content"`
						Refusal   *string `json:"refusal"`
						ToolCalls []struct {
							ID string `json:"id"`
						} `json:"tool_calls"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if ev.data == "[DONE]" || json.Unmarshal([]byte(ev.data), &ch) != nil || len(ch.Choices) == 0 {
				continue
			}
			d := ch.Choices[0].Delta
			if d.Content != nil {
				a.text += *d.Content
			}
			if d.Refusal != nil {
				a.text += *d.Refusal
			}
			for _, tc := range d.ToolCalls {
				if tc.ID != "" {
					a.calls++
				}
			}
		}
		return a
	}
	var b struct {
		Choices []struct {
			Message struct {
				Content   *string           `json:"content"`
				Refusal   *string           `json:"refusal"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		t.Fatalf("%v: %s", err, res.body)
	}
	m := b.Choices[0].Message
	switch {
	case m.Content != nil:
		a.text = *m.Content
	case m.Refusal != nil:
		a.text = *m.Refusal
	}
	a.usage, a.stop, a.calls = b.Usage.Completion, b.Choices[0].FinishReason, len(m.ToolCalls)
	return a
}

func soAnthropic(t *testing.T, srv *httptest.Server, r soReq, stream bool, fault string) soAnswer {
	var extra []string
	if r.schema != "" {
		extra = append(extra, `"output_config":{"format":{"type":"json_schema","schema":`+r.schema+`}}`)
	}
	if r.maxTokens > 0 {
		extra = append(extra, fmt.Sprintf(`"max_tokens":%d`, r.maxTokens)) // the last max_tokens wins
	}
	if r.stop != "" {
		extra = append(extra, `"stop_sequences":[`+jsonText(r.stop)+`]`)
	}
	if r.tools {
		extra = append(extra, toolsField("anthropic", "get_weather"))
	}
	res := exchange(t, srv, "anthropic", reqBody("anthropic", stream, strings.Join(extra, ",")), "X-Mock-Fault", fault)
	a := soAnswer{status: res.status, body: res.body}
	if res.status != 200 {
		return a
	}
	if stream {
		evs, err := events(res.body)
		if err != nil {
			t.Fatal(err)
		}
		st := countStream(t, "anthropic", evs)
		a.deltas, a.usage, a.stop = st.deltas, st.usageOut, st.stop
		for _, ev := range evs {
			if strings.Contains(ev.data, `"type":"tool_use"`) && ev.name == "content_block_start" {
				a.calls++
			}
			if strings.Contains(ev.data, `"text_delta"`) {
				var d struct {
					Delta struct {
						Text string `json:"text"`
					} `json:"delta"`
				}
				json.Unmarshal([]byte(ev.data), &d)
				a.text += d.Delta.Text
			}
		}
		return a
	}
	var b struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      struct {
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		t.Fatalf("%v: %s", err, res.body)
	}
	for _, c := range b.Content {
		if c.Type == "tool_use" {
			a.calls++
		}
		a.text += c.Text
	}
	a.usage, a.stop = b.Usage.Output, b.StopReason
	return a
}

func soGemini(t *testing.T, srv *httptest.Server, r soReq, stream bool, fault string) soAnswer {
	var gen []string
	if r.schema != "" {
		gen = append(gen, `"responseMimeType":"application/json","responseJsonSchema":`+r.schema)
	}
	if r.maxTokens > 0 {
		gen = append(gen, fmt.Sprintf(`"maxOutputTokens":%d`, r.maxTokens))
	}
	if r.stop != "" {
		gen = append(gen, `"stopSequences":[`+jsonText(r.stop)+`]`)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}],"generationConfig":{` + strings.Join(gen, ",") + `}`
	if r.tools {
		body += `,"tools":[{"functionDeclarations":[{"name":"get_weather"}]}]`
	}
	body += "}"
	path := gmGenPath
	if stream {
		path = gmStreamPath
	}
	res := gmDo(t, srv, "POST", path, body, "", "X-Mock-Fault", fault)
	a := soAnswer{status: res.status, body: res.body}
	if res.status != 200 {
		return a
	}
	var chunks []gmResponse
	if stream {
		raw, other := gmChunks(t, res.body)
		if len(other) > 0 {
			t.Fatalf("stream blocks that are not chunks: %q", other)
		}
		for _, ch := range raw {
			var c gmResponse
			b, _ := json.Marshal(ch)
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c)
		}
	} else {
		var c gmResponse
		if err := json.Unmarshal(res.body, &c); err != nil {
			t.Fatalf("%v: %s", err, res.body)
		}
		chunks = append(chunks, c)
	}
	for _, c := range chunks {
		cand := c.Candidates[0]
		if cand.FinishReason != "" {
			a.stop = cand.FinishReason
		}
		if c.UsageMetadata != nil {
			a.usage = c.UsageMetadata.CandidatesTokenCount
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			if p.FunctionCall != nil {
				a.calls++
			}
			if p.Text != nil && *p.Text != "" {
				a.text += *p.Text
				if stream {
					a.deltas = append(a.deltas, *p.Text)
				}
			}
		}
	}
	return a
}

func soBedrock(t *testing.T, srv *httptest.Server, r soReq, stream bool, fault string) soAnswer {
	maxTokens := 256
	if r.maxTokens > 0 {
		maxTokens = r.maxTokens
	}
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":[{"text":"Weather in Paris?"}]}],"inferenceConfig":{"maxTokens":%d`, maxTokens)
	if r.stop != "" {
		body += `,"stopSequences":[` + jsonText(r.stop) + `]`
	}
	body += "}"
	if r.schema != "" {
		body += `,"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"name":"answer","schema":` + jsonText(r.schema) + `}}}}`
	}
	if r.tools {
		body += `,"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}]}`
	}
	body += "}"
	res := brExchange(t, context.Background(), srv, brPath("anthropic.claude-sonnet-4-5", stream), body, "X-Mock-Fault", fault)
	a := soAnswer{status: res.status, body: res.body}
	if res.status != 200 {
		return a
	}
	if stream {
		frames, err := brFrames(t, res.body)
		if err != nil {
			t.Fatal(err)
		}
		st := brCount(t, frames)
		a.deltas, a.usage, a.stop = st.deltas, st.usageOut, st.stop
		for _, f := range frames {
			if f.headers[":event-type"] == "contentBlockStart" {
				a.calls++
			}
			if d, ok := f.payload["delta"].(map[string]any); ok {
				s, _ := d["text"].(string)
				a.text += s
			}
		}
		return a
	}
	var b struct {
		Output struct {
			Message struct {
				Content []struct {
					Text    *string         `json:"text"`
					ToolUse json.RawMessage `json:"toolUse"`
				} `json:"content"`
			} `json:"message"`
		} `json:"output"`
		StopReason string `json:"stopReason"`
		Usage      struct {
			Output int `json:"outputTokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		t.Fatalf("%v: %s", err, res.body)
	}
	for _, c := range b.Output.Message.Content {
		if c.ToolUse != nil {
			a.calls++
		}
		if c.Text != nil {
			a.text += *c.Text
		}
	}
	a.usage, a.stop = b.Usage.Output, b.StopReason
	return a
}

func TestStructuredOutputWire(t *testing.T) {
	want := string(jsonInstance([]byte(zodV4Schema), "primary"))
	tests := []struct {
		name  string
		req   soReq
		fault string
		text  string // the whole answer's text; "-" not checked
		stop  stopKind
		calls int
	}{
		{name: "schema", req: soReq{schema: zodV4Schema}, text: want, stop: stopEnd},
		{name: "max tokens cut", req: soReq{schema: zodV4Schema, maxTokens: 3}, text: strings.Join(pieces(want)[:3], ""), stop: stopLength},
		{name: "tokens= does not cut", req: soReq{schema: zodV4Schema}, fault: "tokens=2", text: want, stop: stopEnd},
		{name: "stop sequences do not cut", req: soReq{schema: zodV4Schema, stop: "primary"}, text: want, stop: stopEnd},
		{name: "cached", req: soReq{schema: zodV4Schema}, fault: "cached=3", text: want, stop: stopEnd},
		{name: "tools first", req: soReq{schema: zodV4Schema, tools: true}, text: "-", stop: stopTool, calls: 1},
		{name: "empty schema", req: soReq{schema: `{}`}, text: `{}`, stop: stopEnd},
	}
	for _, w := range soWires {
		for _, tc := range tests {
			t.Run(w.kind+"/"+tc.name, func(t *testing.T) {
				_, srv := newMock(t, w.kind, Options{Name: "primary"})
				whole := w.send(t, srv, tc.req, false, tc.fault)
				streamed := w.send(t, srv, tc.req, true, tc.fault)
				for i, a := range []soAnswer{whole, streamed} {
					mode := [...]string{"non-streaming", "streaming"}[i]
					if a.status != 200 {
						t.Fatalf("%s: %d %s", mode, a.status, a.body)
					}
					if tc.text != "-" && a.text != tc.text {
						t.Errorf("%s text\n%s\nwant\n%s", mode, a.text, tc.text)
					}
					if a.stop != w.stop[tc.stop] || a.calls != tc.calls {
						t.Errorf("%s: stop %q calls %d, want %q and %d", mode, a.stop, a.calls, w.stop[tc.stop], tc.calls)
					}
				}
				if tc.text != "-" && tc.stop == stopEnd {
					checkInstance(t, tc.req.schema, []byte(whole.text))
				}
				for _, d := range streamed.deltas {
					if len(d) > 4 || d == "" {
						t.Errorf("delta %q: want 1..4 bytes", d)
					}
				}
				wantDeltas := len(streamed.deltas)
				if tc.calls > 0 && w.kind == "gemini" {
					wantDeltas = tc.calls // Gemini sends a call whole
				}
				if tc.calls == 0 && wantDeltas != len(pieces(tc.text)) {
					t.Errorf("%d deltas, want %d", wantDeltas, len(pieces(tc.text)))
				}
				if streamed.usage != wantDeltas || whole.usage != wantDeltas {
					t.Errorf("usage %d streamed, %d whole; want %d (the content deltas)", streamed.usage, whole.usage, wantDeltas)
				}
			})
		}
	}
}

// A refusal stays a refusal when the request asks for JSON.
func TestStructuredOutputRefusal(t *testing.T) {
	for _, w := range soWires {
		t.Run(w.kind, func(t *testing.T) {
			_, srv := newMock(t, w.kind, Options{Name: "primary"})
			for _, stream := range []bool{false, true} {
				a := w.send(t, srv, soReq{schema: zodV4Schema}, stream, "refusal")
				if a.status != 200 || a.stop != w.stop[stopRefusal] {
					t.Fatalf("stream %v: %d stop %q %s", stream, a.status, a.stop, a.body)
				}
				want := ""
				if w.kind == "openai" {
					want = defaultRefusal
				}
				if a.text != want {
					t.Errorf("stream %v: text %q, want %q", stream, a.text, want)
				}
			}
		})
	}
}

// The modes beside a JSON Schema: OpenAI json_object and text, Gemini's
// other mime types and its OpenAPI responseSchema, Anthropic's deprecated
// output_format.
func TestStructuredOutputModes(t *testing.T) {
	const gmContents = `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	tests := []struct {
		name, kind, body string
		want             string // exact text; a "mock primary" prefix when "text"
	}{
		{"json_object", "openai", reqBody("openai", false, `"response_format":{"type":"json_object"}`), `{"mock":"primary"}`},
		{"response_format text", "openai", reqBody("openai", false, `"response_format":{"type":"text"}`), "text"},
		{"json_schema without schema", "openai", reqBody("openai", false, `"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`), `{}`},
		{"output_config.format", "anthropic", reqBody("anthropic", false, `"output_config":{"effort":"low","format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}`), `{"a":1}`},
		{"deprecated output_format", "anthropic", reqBody("anthropic", false, `"output_format":{"type":"json_schema","schema":{"type":"array","items":{"type":"boolean"}}}`), `[true]`},
		{"output_config.format wins", "anthropic", reqBody("anthropic", false, `"output_format":{"type":"json_schema","schema":{"type":"string"}},"output_config":{"format":{"type":"json_schema","schema":{"type":"integer"}}}`), `1`},
		{"output_config without format", "anthropic", reqBody("anthropic", false, `"output_config":{"effort":"high"}`), "text"},
		{"application/json alone", "gemini", `{` + gmContents + `,"generationConfig":{"responseMimeType":"application/json"}}`, `{"mock":"primary"}`},
		{"responseSchema", "gemini", `{` + gmContents + `,"generationConfig":{"responseMimeType":"application/json","responseSchema":` + geminiSchema + `}}`, strings.ReplaceAll(geminiWant, `"mock"`, `"primary"`)},
		{"responseJsonSchema wins", "gemini", `{` + gmContents + `,"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"STRING"},"responseJsonSchema":{"type":"integer"}}}`, `1`},
		{"mime type parameters", "gemini", `{` + gmContents + `,"generationConfig":{"responseMimeType":"Application/JSON; charset=utf-8","responseJsonSchema":{"type":"boolean"}}}`, `true`},
		{"text/x.enum", "gemini", `{` + gmContents + `,"generationConfig":{"responseMimeType":"text/x.enum","responseSchema":{"type":"STRING","format":"enum","enum":["red","green"]}}}`, `red`},
		{"schema without mime type", "gemini", `{` + gmContents + `,"generationConfig":{"responseSchema":{"type":"STRING"}}}`, "text"},
		{"text/plain", "gemini", `{` + gmContents + `,"generationConfig":{"responseMimeType":"text/plain","responseJsonSchema":{"type":"integer"}}}`, "text"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			_, srv := newMock(t, tc.kind, Options{Name: "primary"})
			var r result
			if tc.kind == "gemini" {
				r = gmDo(t, srv, "POST", gmGenPath, tc.body, "")
			} else {
				r = exchange(t, srv, tc.kind, tc.body)
			}
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			var text string
			if tc.kind == "gemini" {
				var g gmResponse
				if err := json.Unmarshal(r.body, &g); err != nil {
					t.Fatal(err)
				}
				text = *g.Candidates[0].Content.Parts[0].Text
			} else {
				_, text = nonStreamUsage(t, tc.kind, r.body)
			}
			switch {
			case tc.want == "text":
				if !strings.HasPrefix(text, "mock primary ") {
					t.Errorf("text %q, want the filler text", text)
				}
			case text != tc.want:
				t.Errorf("text %s, want %s", text, tc.want)
			}
		})
	}
}

// Malformed structured-output requests get the provider's 400.
func TestStructuredOutputValidation(t *testing.T) {
	const brMsgs = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],`
	tests := []struct {
		name, kind, body string
		status           int
		msgHas           string
	}{
		{"bad type", "openai", reqBody("openai", false, `"response_format":{"type":"yaml"}`), 400, "Supported values are: 'json_object', 'json_schema', and 'text'"},
		{"no type", "openai", reqBody("openai", false, `"response_format":{}`), 400, "'response_format.type'"},
		{"no json_schema", "openai", reqBody("openai", false, `"response_format":{"type":"json_schema"}`), 400, "'response_format.json_schema'"},
		{"no name", "openai", reqBody("openai", false, `"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`), 400, "'response_format.json_schema.name'"},
		{"not an object", "openai", reqBody("openai", false, `"response_format":"json"`), 400, "Invalid type for 'response_format': expected an object, but got a string instead."},
		{"name not a string", "openai", reqBody("openai", false, `"response_format":{"type":"json_schema","json_schema":{"name":7}}`), 400, "Invalid type for 'response_format.json_schema.name': expected a string, but got a number instead."},
		{"bad format type", "anthropic", reqBody("anthropic", false, `"output_config":{"format":{"type":"json","schema":{}}}`), 400, "output_config.format: Input tag 'json'"},
		{"no schema", "anthropic", reqBody("anthropic", false, `"output_config":{"format":{"type":"json_schema"}}`), 400, "output_config.format.schema: Field required"},
		{"deprecated, no schema", "anthropic", reqBody("anthropic", false, `"output_format":{"type":"json_schema","schema":null}`), 400, "output_format.schema: Field required"},
		{"bad textFormat type", "bedrock", brMsgs + `"outputConfig":{"textFormat":{"type":"xml","structure":{"jsonSchema":{"schema":"{}"}}}}}`, 400, "[json_schema]"},
		{"no structure", "bedrock", brMsgs + `"outputConfig":{"textFormat":{"type":"json_schema"}}}`, 400, "outputConfig.textFormat.structure"},
		{"no schema", "bedrock", brMsgs + `"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"name":"x"}}}}}`, 400, "jsonSchema.schema"},
		{"schema not JSON", "bedrock", brMsgs + `"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{nope"}}}}}`, 400, "not valid JSON"},
		{"effort only", "bedrock", brMsgs + `"outputConfig":{"effort":"low"}}`, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			_, srv := newMock(t, tc.kind, Options{})
			var r result
			if tc.kind == "bedrock" {
				r = brExchange(t, context.Background(), srv, brPath("m", false), tc.body)
			} else {
				r = exchange(t, srv, tc.kind, tc.body)
			}
			if r.status != tc.status || !strings.Contains(string(r.body), tc.msgHas) {
				t.Errorf("%d %s, want %d with %q", r.status, r.body, tc.status, tc.msgHas)
			}
			if tc.status == http.StatusBadRequest && tc.kind == "bedrock" && !strings.HasPrefix(r.header.Get("X-Amzn-ErrorType"), "ValidationException") {
				t.Errorf("X-Amzn-ErrorType %q", r.header.Get("X-Amzn-ErrorType"))
			}
		})
	}
}
