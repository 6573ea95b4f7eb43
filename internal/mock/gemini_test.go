package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Wire-level checks of the Gemini mock that go-genai is too lenient to
// make: framing, routing, credentials and request validation.

const gmBody = `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}]}`

// gmDo sends body to path (relative to the server) with the key header
// unless key is "".
func gmDo(t *testing.T, srv *httptest.Server, method, path, body, key string, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, b, rerr}
}

const (
	gmGenPath    = "/v1beta/models/gemini-2.5-flash:generateContent"
	gmStreamPath = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
)

// gmErr decodes a Google RPC error body strictly.
func gmErr(t *testing.T, r result) (code int, status, msg string, details []map[string]any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
		t.Errorf("error content type %q", ct)
	}
	var b struct {
		Error *struct {
			Code    int              `json:"code"`
			Message string           `json:"message"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Error == nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if b.Error.Code != r.status {
		t.Errorf("error.code %d, HTTP status %d", b.Error.Code, r.status)
	}
	return b.Error.Code, b.Error.Status, b.Error.Message, b.Error.Details
}

func TestGeminiRoutesAndKeys(t *testing.T) {
	_, srv := newMock(t, "gemini", Options{APIKey: gmKey})
	tests := []struct {
		name, method, path, key string
		status                  int
		gstatus                 string
	}{
		{"missing key", "POST", gmGenPath, "", 403, "PERMISSION_DENIED"},
		{"wrong key", "POST", gmGenPath, "AIza-wrong", 400, "INVALID_ARGUMENT"},
		{"wrong query key", "POST", gmGenPath + "?key=AIza-wrong", "", 400, "INVALID_ARGUMENT"},
		{"stream without alt=sse", "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", gmKey, 400, "INVALID_ARGUMENT"},
		{"GET on a method", "GET", gmGenPath, gmKey, 404, "NOT_FOUND"},
		{"unknown method", "POST", "/v1beta/models/gemini-2.5-flash:countTokens", gmKey, 404, "NOT_FOUND"},
		{"no model", "POST", "/v1beta/models/:generateContent", gmKey, 404, "NOT_FOUND"},
		{"other API", "POST", "/v1/chat/completions", gmKey, 404, "NOT_FOUND"},
		{"key in header", "POST", gmGenPath, gmKey, 200, ""},
		{"key in query", "POST", gmGenPath + "?key=" + gmKey, "", 200, ""},
		{"v1 route", "POST", "/v1/models/gemini-2.5-flash:generateContent", gmKey, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gmDo(t, srv, tt.method, tt.path, gmBody, tt.key)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status == 200 {
				return
			}
			_, status, _, details := gmErr(t, r)
			if status != tt.gstatus {
				t.Errorf("status %q, want %q", status, tt.gstatus)
			}
			if tt.name == "wrong key" {
				if len(details) != 2 || details[0]["reason"] != "API_KEY_INVALID" || details[1]["@type"] != "type.googleapis.com/google.rpc.LocalizedMessage" {
					t.Errorf("bad-key details %v", details)
				}
			}
		})
	}
}

func TestGeminiRequestValidation(t *testing.T) {
	_, srv := newMock(t, "gemini", Options{})
	call := `{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"f","args":{}}}]}`
	resp := `{"functionResponse":{"name":"f","response":{"output":"x"}}}`
	tests := []struct {
		name, body, msgHas, field string
	}{
		{"not json", `{`, "Invalid JSON payload", ""},
		{"no contents", `{"generationConfig":{}}`, "contents is not specified", "contents"},
		{"empty contents", `{"contents":[]}`, "contents is not specified", "contents"},
		{"unknown top-level name", `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"model":"gemini-2.5-flash"}`, `Unknown name "model"`, "model"},
		{"unknown generationConfig name", `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"max_tokens":5}}`, `Unknown name "max_tokens"`, "generation_config"},
		{"bad role", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, "valid role", "contents"},
		{"no parts", `{"contents":[{"role":"user","parts":[]}]}`, "must not be empty", "contents"},
		{"empty part", `{"contents":[{"role":"user","parts":[{}]}]}`, "oneof field 'data'", "contents"},
		{"two data fields", `{"contents":[{"role":"user","parts":[{"text":"x","inlineData":{"mimeType":"image/png","data":""}}]}]}`, "oneof field 'data'", "contents"},
		{"responses split from their calls", `{"contents":[{"role":"user","parts":[{"text":"x"}]},` + call + `,{"role":"user","parts":[` + resp + `]},{"role":"user","parts":[` + resp + `]}]}`, "number of function response parts", "contents"},
		{"bad mode", `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"REQUIRED"}}}`, "function_calling_config.mode", "tool_config.function_calling_config.mode"},
		{"negative max tokens", `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":-1}}`, "must be positive", "generation_config.max_output_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gmDo(t, srv, "POST", gmGenPath, tt.body, "")
			if r.status != 400 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			_, status, msg, details := gmErr(t, r)
			if status != "INVALID_ARGUMENT" || !strings.Contains(msg, tt.msgHas) {
				t.Errorf("%s %q, want INVALID_ARGUMENT containing %q", status, msg, tt.msgHas)
			}
			var field any
			for _, d := range details {
				if fv, ok := d["fieldViolations"].([]any); ok && len(fv) > 0 {
					field = fv[0].(map[string]any)["field"]
				}
			}
			if tt.field != "" && field != tt.field {
				t.Errorf("BadRequest field %v, want %q", field, tt.field)
			}
		})
	}
	ok := `{"contents":[{"role":"user","parts":[{"text":"x"}]},` + call + `,{"role":"user","parts":[` + resp + `,` + resp + `]}]}`
	if r := gmDo(t, srv, "POST", gmGenPath, ok, ""); r.status != 200 {
		t.Errorf("matched responses: %d %s", r.status, r.body)
	}
}

// gmChunks splits a stream body go-genai's way and checks the framing: one
// "data: " line of JSON per block, nothing else.
func gmChunks(t *testing.T, body []byte) (chunks []map[string]json.RawMessage, other []string) {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Errorf("stream does not end with a blank line: %q", body[max(0, len(body)-20):])
	}
	for _, blk := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(blk, "data: ")
		if !ok || strings.Contains(data, "\n") {
			other = append(other, blk)
			continue
		}
		var ch map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			other = append(other, blk)
			continue
		}
		chunks = append(chunks, ch)
	}
	return chunks, other
}

func TestGeminiStreamFraming(t *testing.T) {
	_, srv := newMock(t, "gemini", Options{Name: "g"})
	body := `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"},{"name":"g"}]}]}`
	r := gmDo(t, srv, "POST", gmStreamPath, body, "", "X-Mock-Fault", "tools=2")
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || r.readErr != nil {
		t.Fatalf("status %d type %q err %v", r.status, r.header.Get("Content-Type"), r.readErr)
	}
	chunks, other := gmChunks(t, r.body)
	if len(other) != 0 || len(chunks) != 3 {
		t.Fatalf("%d chunks, other blocks %q", len(chunks), other)
	}
	for i, ch := range chunks {
		for _, k := range []string{"candidates", "usageMetadata", "modelVersion", "responseId"} {
			if _, ok := ch[k]; !ok {
				t.Errorf("chunk %d lacks %s", i, k)
			}
		}
		if _, ok := ch["error"]; ok {
			t.Errorf("chunk %d carries an error key", i)
		}
	}
	// Whole calls, one per chunk; STOP (no tool-use reason) and full usage
	// only on the last.
	for i, want := range []string{`{"functionCall":{"name":"f","args":{"city":"Paris"}}}`, `{"functionCall":{"name":"g","args":{"city":"Paris"}}}`} {
		if !strings.Contains(string(chunks[i]["candidates"]), want) || strings.Contains(string(chunks[i]["usageMetadata"]), "candidatesTokenCount") {
			t.Errorf("chunk %d: %s %s", i, chunks[i]["candidates"], chunks[i]["usageMetadata"])
		}
	}
	if last := chunks[2]; !strings.Contains(string(last["candidates"]), `"finishReason":"STOP"`) || !strings.Contains(string(last["usageMetadata"]), `"candidatesTokenCount":2`) {
		t.Errorf("last chunk %s %s", last["candidates"], last["usageMetadata"])
	}

	// error_after: the content so far, then one block that is a bare,
	// multi-line Google RPC error (no "data:" prefix).
	r = gmDo(t, srv, "POST", gmStreamPath, gmBody, "", "X-Mock-Fault", "error_after=2")
	chunks, other = gmChunks(t, r.body)
	if len(chunks) != 2 || len(other) != 1 || !strings.HasPrefix(other[0], "{\n  \"error\": {") {
		t.Fatalf("error_after: %d chunks, other %q", len(chunks), other)
	}
	var e struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(other[0]), &e); err != nil || e.Error.Code != 500 || e.Error.Status != "INTERNAL" {
		t.Errorf("in-stream error %q: %v", other[0], err)
	}
}

func TestGeminiAccounting(t *testing.T) {
	_, srv := newMock(t, "gemini", Options{Name: "acct"})
	tools := `,"tools":[{"functionDeclarations":[{"name":"f"}]}]`
	tests := []struct {
		fault, extra string
		deltas       int
	}{
		{"tokens=0", "", 0},
		{"tokens=1", "", 1},
		{"tokens=37;cached=9", "", 37},
		{"tools=3", tools, 3},
		{"args={\"q\":\"a long argument that would be many fragments elsewhere\"}", tools, 1},
		{"refusal", "", 0},
		{"refusal;tokens=4", "", 4},
	}
	for _, tt := range tests {
		body := strings.TrimSuffix(gmBody, "}") + tt.extra + "}"
		r := gmDo(t, srv, "POST", gmStreamPath, body, "", "X-Mock-Fault", tt.fault)
		chunks, other := gmChunks(t, r.body)
		if len(other) != 0 || len(chunks) != tt.deltas+1 {
			t.Fatalf("%s: %d chunks, other %q", tt.fault, len(chunks), other)
		}
		var u struct {
			Prompt     int `json:"promptTokenCount"`
			Candidates int `json:"candidatesTokenCount"`
			Total      int `json:"totalTokenCount"`
			Cached     int `json:"cachedContentTokenCount"`
		}
		json.Unmarshal(chunks[len(chunks)-1]["usageMetadata"], &u)
		prompt := (len(body) + 3) / 4
		if u.Candidates != tt.deltas || u.Prompt != prompt || u.Total != prompt+tt.deltas {
			t.Errorf("%s: streamed usage %+v, want %d candidates, prompt %d", tt.fault, u, tt.deltas, prompt)
		}
		nr := gmDo(t, srv, "POST", gmGenPath, body, "", "X-Mock-Fault", tt.fault)
		var res struct {
			Usage struct {
				Candidates int `json:"candidatesTokenCount"`
				Cached     int `json:"cachedContentTokenCount"`
			} `json:"usageMetadata"`
		}
		if err := json.Unmarshal(nr.body, &res); err != nil || res.Usage.Candidates != tt.deltas || res.Usage.Cached != u.Cached {
			t.Errorf("%s: non-streamed usage %+v (%v), want %d", tt.fault, res.Usage, err, tt.deltas)
		}
	}
}

func TestGeminiTimesHeals(t *testing.T) {
	_, srv := newMock(t, "gemini", Options{Fault: "status=503;times=2"})
	for i, want := range []int{503, 503, 200} {
		if r := gmDo(t, srv, "POST", gmGenPath, gmBody, ""); r.status != want {
			t.Errorf("request %d: %d, want %d", i, r.status, want)
		}
	}
}

// FuzzGeminiRequest: the mock's request decoder and route parser never
// panic; a body is either a request or a 400 INVALID_ARGUMENT.
func FuzzGeminiRequest(f *testing.F) {
	f.Add(gmBody, gmGenPath)
	f.Add(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}},"generationConfig":{"maxOutputTokens":3,"stopSequences":["x"]}}`, "/v1/models/m:streamGenerateContent")
	f.Add(`{"contents":null}`, "/v1beta/models/:generateContent")
	f.Fuzz(func(t *testing.T, body, path string) {
		if model, _, ok := geminiRoute(path); ok && (model == "" || strings.ContainsAny(model, "/:")) {
			t.Fatalf("route %q gave model %q", path, model)
		}
		req, e := geminiAPI{}.decode(nil, []byte(body))
		switch {
		case e != nil && (e.status != 400 || e.typ != "INVALID_ARGUMENT" || req != nil):
			t.Fatalf("error %+v", e)
		case e == nil && (req == nil || req.maxTokens < -1 || req.toolChoice == ""):
			t.Fatalf("request %+v", req)
		}
	})
}
