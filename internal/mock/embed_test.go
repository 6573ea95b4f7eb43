package mock

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"
)

const (
	embOAKey = "sk-test-key-0123456789"
	embBRKey = "bedrock-api-key-0123456789"
	// embTitanARN and embCohereARN are foundation-model ARNs: their ':'
	// and '/' travel percent-encoded inside one path label.
	embTitanARN  = "arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0"
	embCohereARN = "arn:aws:bedrock:us-east-1::foundation-model/cohere.embed-english-v3"
)

// embModelPath is Bedrock's InvokeModel path for model, escaped as the SDK
// escapes it.
func embModelPath(model string) string {
	return "/model/" + strings.ReplaceAll(url.PathEscape(model), ":", "%3A") + "/invoke"
}

// embAuth is the credential header each wire's embeddings tests send.
func embAuth(kind string) []string {
	switch kind {
	case "openai":
		return []string{"Authorization", "Bearer " + embOAKey}
	case "gemini":
		return []string{"x-goog-api-key", gmKey}
	}
	return []string{"Authorization", "Bearer " + embBRKey}
}

func embMock(t *testing.T, kind string) (*Mock, *httptest.Server) {
	t.Helper()
	key := map[string]string{"openai": embOAKey, "gemini": gmKey, "bedrock": embBRKey}[kind]
	return newMock(t, kind, Options{APIKey: key})
}

// embPost posts body to path with the given header pairs (a "" value
// deletes the header) and reads the whole answer.
func embPost(t *testing.T, ctx context.Context, srv *httptest.Server, method, path, body string, hdr ...string) (result, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, b, rerr}, nil
}

func embDo(t *testing.T, srv *httptest.Server, path, body string, hdr ...string) result {
	t.Helper()
	res, err := embPost(t, context.Background(), srv, http.MethodPost, path, body, hdr...)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return res
}

// embCheckVector checks a vector's length, range and (when unit) norm.
func embCheckVector(t *testing.T, v []float32, dims int, unit bool) {
	t.Helper()
	if len(v) != dims {
		t.Fatalf("vector of %d values, want %d", len(v), dims)
	}
	sum := 0.0
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || f < -1 || f > 1 {
			t.Fatalf("value %d = %v, want a finite float in [-1, 1]", i, f)
		}
		sum += float64(f) * float64(f)
	}
	if unit && math.Abs(math.Sqrt(sum)-1) > 1e-5 {
		t.Errorf("norm %v, want 1", math.Sqrt(sum))
	}
}

func embEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func embDecodeBase64(t *testing.T, s string) []float32 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%4 != 0 {
		t.Fatalf("base64 embedding %q: %v (%d bytes)", s, err, len(raw))
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

type oaEmbedAnswer struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors reads every datum's embedding, floats or base64.
func (a oaEmbedAnswer) vectors(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, d := range a.Data {
		var s string
		if json.Unmarshal(d.Embedding, &s) == nil {
			out = append(out, embDecodeBase64(t, s))
			continue
		}
		var v []float32
		if err := json.Unmarshal(d.Embedding, &v); err != nil {
			t.Fatalf("embedding %s: %v", d.Embedding, err)
		}
		out = append(out, v)
	}
	return out
}

func TestEmbedOpenAI(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		n      int
		dims   int
		tokens int
	}{
		{"string", `{"model":"text-embedding-3-small","input":"hello world"}`, 1, 8, 3},
		{"strings", `{"model":"text-embedding-3-small","input":["a","bcdefgh"],"user":"u1"}`, 2, 8, 3},
		{"token ids", `{"model":"text-embedding-3-small","input":[1,2,3]}`, 1, 8, 3},
		{"token id arrays", `{"model":"text-embedding-3-small","input":[[1,2],[3]]}`, 2, 8, 3},
		{"dimensions", `{"model":"text-embedding-3-large","input":"hello","dimensions":16,"encoding_format":"float"}`, 1, 16, 2},
		{"base64", `{"model":"text-embedding-3-small","input":["hello","world!"],"encoding_format":"base64"}`, 2, 8, 4},
		{"base64 dimensions", `{"model":"text-embedding-3-small","input":"hello","dimensions":3,"encoding_format":"base64"}`, 1, 3, 2},
	}
	m, srv := embMock(t, "openai")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := embDo(t, srv, "/v1/embeddings", tt.body, embAuth("openai")...)
			if res.status != 200 || res.readErr != nil {
				t.Fatalf("status %d err %v: %s", res.status, res.readErr, res.body)
			}
			if res.header.Get("x-request-id") == "" || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
				t.Errorf("headers %v", res.header)
			}
			var a oaEmbedAnswer
			if err := json.Unmarshal(res.body, &a); err != nil {
				t.Fatal(err)
			}
			var in struct{ Model string }
			json.Unmarshal([]byte(tt.body), &in)
			if a.Object != "list" || a.Model != in.Model || len(a.Data) != tt.n {
				t.Fatalf("answer %s", res.body)
			}
			if a.Usage.PromptTokens != tt.tokens || a.Usage.TotalTokens != tt.tokens {
				t.Errorf("usage %+v, want %d", a.Usage, tt.tokens)
			}
			vs := a.vectors(t)
			for i, d := range a.Data {
				if d.Object != "embedding" || d.Index != i {
					t.Errorf("datum %d: object %q index %d", i, d.Object, d.Index)
				}
				embCheckVector(t, vs[i], tt.dims, true)
			}
			if strings.Contains(tt.body, "base64") {
				// The same request as floats carries the same bits.
				float := embDo(t, srv, "/v1/embeddings", strings.Replace(tt.body, `"base64"`, `"float"`, 1), embAuth("openai")...)
				var fa oaEmbedAnswer
				if err := json.Unmarshal(float.body, &fa); err != nil {
					t.Fatal(err)
				}
				for i, v := range fa.vectors(t) {
					if !embEqual(v, vs[i]) {
						t.Errorf("datum %d: base64 %v, floats %v", i, vs[i], v)
					}
				}
			}
			// Deterministic: the same request, the same answer.
			if again := embDo(t, srv, "/v1/embeddings", tt.body, embAuth("openai")...); string(again.body) != string(res.body) {
				t.Errorf("answers differ:\n%s\n%s", res.body, again.body)
			}
		})
	}
	if n := m.Count(); n < len(tests) {
		t.Errorf("Count %d, want at least %d", n, len(tests))
	}
	if p := m.Requests()[0].Path; p != "/v1/embeddings" {
		t.Errorf("recorded path %q", p)
	}
}

func TestEmbedOpenAIErrors(t *testing.T) {
	many := `["x"` + strings.Repeat(`,"x"`, oaMaxEmbedInputs) + `]`
	tests := []struct {
		name   string
		method string
		body   string
		hdr    []string
		status int
		typ    string
		param  string // "" for null
		code   string // "" for null
		msgHas string
	}{
		{name: "missing model", body: `{"input":"hi"}`, status: 400, typ: "invalid_request_error", param: "model", code: "missing_required_parameter"},
		{name: "empty model", body: `{"model":"","input":"hi"}`, status: 400, typ: "invalid_request_error", param: "model", code: "empty_string"},
		{name: "missing input", body: `{"model":"m"}`, status: 400, typ: "invalid_request_error", param: "input", code: "missing_required_parameter", msgHas: "'input'"},
		{name: "null input", body: `{"model":"m","input":null}`, status: 400, typ: "invalid_request_error", param: "input", code: "missing_required_parameter"},
		{name: "empty string", body: `{"model":"m","input":""}`, status: 400, typ: "invalid_request_error", param: "input", code: "empty_string"},
		{name: "empty array", body: `{"model":"m","input":[]}`, status: 400, typ: "invalid_request_error", param: "input", code: "empty_array"},
		{name: "too many inputs", body: `{"model":"m","input":` + many + `}`, status: 400, typ: "invalid_request_error", param: "input", code: "array_above_max_length", msgHas: "2049"},
		{name: "empty string item", body: `{"model":"m","input":["a",""]}`, status: 400, typ: "invalid_request_error", param: "input[1]", code: "invalid_value"},
		{name: "mixed items", body: `{"model":"m","input":["a",1]}`, status: 400, typ: "invalid_request_error", param: "input[1]", code: "invalid_value"},
		{name: "empty token array", body: `{"model":"m","input":[[1],[]]}`, status: 400, typ: "invalid_request_error", param: "input[1]", code: "invalid_value"},
		{name: "negative token", body: `{"model":"m","input":[1,-2]}`, status: 400, typ: "invalid_request_error", param: "input", code: "invalid_type"},
		{name: "object input", body: `{"model":"m","input":{"a":1}}`, status: 400, typ: "invalid_request_error", param: "input", code: "invalid_type"},
		{name: "dimensions zero", body: `{"model":"m","input":"hi","dimensions":0}`, status: 400, typ: "invalid_request_error", param: "dimensions", code: "integer_below_min_value"},
		{name: "dimensions too many", body: `{"model":"m","input":"hi","dimensions":4097}`, status: 400, typ: "invalid_request_error", param: "dimensions", code: "integer_above_max_value"},
		{name: "dimensions type", body: `{"model":"m","input":"hi","dimensions":"8"}`, status: 400, typ: "invalid_request_error", param: "dimensions", code: "invalid_type", msgHas: "expected an integer, but got a string"},
		{name: "encoding format", body: `{"model":"m","input":"hi","encoding_format":"int8"}`, status: 400, typ: "invalid_request_error", param: "encoding_format", code: "invalid_value"},
		{name: "unknown argument", body: `{"model":"m","input":"hi","foo":1}`, status: 400, typ: "invalid_request_error", msgHas: "Unrecognized request argument supplied: foo"},
		{name: "not json", body: `{"model":`, status: 400, typ: "invalid_request_error", msgHas: "could not parse the JSON body"},
		{name: "no key", body: `{"model":"m","input":"hi"}`, hdr: []string{"Authorization", ""}, status: 401, typ: "invalid_request_error", msgHas: "didn't provide an API key"},
		{name: "wrong key", body: `{"model":"m","input":"hi"}`, hdr: []string{"Authorization", "Bearer sk-wrong-key-0000"}, status: 401, typ: "invalid_request_error", code: "invalid_api_key"},
		{name: "GET", method: http.MethodGet, status: 405, typ: "invalid_request_error", msgHas: "Invalid method for URL (GET /v1/embeddings)"},
		{name: "bad fault header", body: `{"model":"m","input":"hi"}`, hdr: []string{"X-Mock-Fault", "status=200"}, status: 400, typ: "invalid_request_error", msgHas: "X-Mock-Fault"},
	}
	_, srv := embMock(t, "openai")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			res, err := embPost(t, context.Background(), srv, method, "/v1/embeddings", tt.body, append(embAuth("openai"), tt.hdr...)...)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(res.body, &e); err != nil {
				t.Fatalf("body %s: %v", res.body, err)
			}
			deref := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			got := e.Error
			if res.status != tt.status || got.Type != tt.typ || deref(got.Param) != tt.param || deref(got.Code) != tt.code || !strings.Contains(got.Message, tt.msgHas) {
				t.Errorf("status %d, error %s", res.status, res.body)
			}
		})
	}
}

type gmEmbedAnswer struct {
	Embedding *struct {
		Values []float32 `json:"values"`
	} `json:"embedding"`
	Embeddings []struct {
		Values []float32 `json:"values"`
	} `json:"embeddings"`
}

func TestEmbedGemini(t *testing.T) {
	batch := func(model string, dims int, texts ...string) string {
		var reqs []string
		for _, s := range texts {
			r := `{"model":"models/` + model + `","content":{"parts":[{"text":` + jsonText(s) + `}]}`
			if dims > 0 {
				r += `,"outputDimensionality":` + fmt.Sprint(dims)
			}
			reqs = append(reqs, r+`}`)
		}
		return `{"requests":[` + strings.Join(reqs, ",") + `]}`
	}
	tests := []struct {
		name  string
		path  string
		body  string
		hdr   []string
		batch bool
		n     int
		dims  int
	}{
		{"batch", "/v1beta/models/gemini-embedding-001:batchEmbedContents", batch("gemini-embedding-001", 0, "alpha", "beta", "gamma"), nil, true, 3, 8},
		{"batch v1", "/v1/models/gemini-embedding-001:batchEmbedContents", batch("gemini-embedding-001", 0, "alpha"), nil, true, 1, 8},
		{"batch dimensions", "/v1beta/models/text-embedding-004:batchEmbedContents", batch("text-embedding-004", 24, "alpha", "beta"), nil, true, 2, 24},
		{"batch task type", "/v1beta/models/m:batchEmbedContents", `{"requests":[{"model":"models/m","content":{"role":"user","parts":[{"text":"al"},{"text":"pha"}]},"taskType":"RETRIEVAL_DOCUMENT","title":"T"}]}`, nil, true, 1, 8},
		{"key in query", "/v1beta/models/m:batchEmbedContents?key=" + gmKey, batch("m", 0, "alpha"), []string{"x-goog-api-key", ""}, true, 1, 8},
		{"embedContent", "/v1beta/models/gemini-embedding-001:embedContent", `{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"alpha"}]},"outputDimensionality":5}`, nil, false, 1, 5},
		{"embedContent without model", "/v1/models/gemini-embedding-001:embedContent", `{"content":{"parts":[{"text":"alpha"}]}}`, nil, false, 1, 8},
	}
	m, srv := embMock(t, "gemini")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := embDo(t, srv, tt.path, tt.body, append(embAuth("gemini"), tt.hdr...)...)
			if res.status != 200 || res.readErr != nil {
				t.Fatalf("status %d err %v: %s", res.status, res.readErr, res.body)
			}
			var a gmEmbedAnswer
			if err := json.Unmarshal(res.body, &a); err != nil {
				t.Fatal(err)
			}
			var vs [][]float32
			if tt.batch {
				if a.Embedding != nil {
					t.Errorf("batch answer carries embedding: %s", res.body)
				}
				for _, e := range a.Embeddings {
					vs = append(vs, e.Values)
				}
			} else {
				if a.Embedding == nil || a.Embeddings != nil {
					t.Fatalf("embedContent answer %s", res.body)
				}
				vs = append(vs, a.Embedding.Values)
			}
			if len(vs) != tt.n {
				t.Fatalf("%d embeddings, want %d: %s", len(vs), tt.n, res.body)
			}
			for _, v := range vs {
				embCheckVector(t, v, tt.dims, true)
			}
			if tt.n > 1 && embEqual(vs[0], vs[1]) {
				t.Errorf("different texts, same vector")
			}
		})
	}
	if m.Count() != len(tests) {
		t.Errorf("Count %d, want %d", m.Count(), len(tests))
	}
}

func TestEmbedGeminiErrors(t *testing.T) {
	const path = "/v1beta/models/gemini-embedding-001:batchEmbedContents"
	one := `{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]}}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		hdr     []string
		status  int
		code    string
		msgHas  string
		field   string // a BadRequest fieldViolation's field
		reason  string // an ErrorInfo reason
		details bool
	}{
		{name: "not json", body: `{`, status: 400, code: "INVALID_ARGUMENT", msgHas: "Invalid JSON payload"},
		{name: "unknown name", body: `{"requests":[],"foo":1}`, status: 400, code: "INVALID_ARGUMENT", msgHas: `Unknown name "foo"`, field: "foo"},
		{name: "no requests", body: `{"requests":[]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests"},
		{name: "too many requests", body: `{"requests":[` + strings.Repeat(one+",", gmMaxEmbedBatch) + one + `]}`, status: 400, code: "INVALID_ARGUMENT", msgHas: "at most 100 requests can be in one batch", field: "requests"},
		{name: "unknown member", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"dims":3}]}`, status: 400, code: "INVALID_ARGUMENT", msgHas: `Unknown name "dims" at 'requests[0]'`},
		{name: "no model", body: `{"requests":[{"content":{"parts":[{"text":"a"}]}}]}`, status: 400, code: "INVALID_ARGUMENT", msgHas: "unexpected model name format", field: "requests[0].model"},
		{name: "other model", body: `{"requests":[{"model":"models/text-embedding-004","content":{"parts":[{"text":"a"}]}}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].model"},
		{name: "no content", body: `{"requests":[{"model":"models/gemini-embedding-001"}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].content"},
		{name: "no parts", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[]}}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].content.parts"},
		{name: "image part", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"inlineData":{"mimeType":"image/png","data":""}}]}}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].content.parts[0]"},
		{name: "task type", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"taskType":"SEARCH"}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].task_type"},
		{name: "dimensions zero", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":0}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].output_dimensionality"},
		{name: "dimensions too many", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":4097}]}`, status: 400, code: "INVALID_ARGUMENT", field: "requests[0].output_dimensionality"},
		{name: "embedContent no content", path: "/v1beta/models/gemini-embedding-001:embedContent", body: `{}`, status: 400, code: "INVALID_ARGUMENT", msgHas: "EmbedContentRequest.content", field: "content"},
		{name: "no key", body: `{"requests":[` + one + `]}`, hdr: []string{"x-goog-api-key", ""}, status: 403, code: "PERMISSION_DENIED"},
		{name: "wrong key", body: `{"requests":[` + one + `]}`, hdr: []string{"x-goog-api-key", "AIza-wrong"}, status: 400, code: "INVALID_ARGUMENT", reason: "API_KEY_INVALID"},
		{name: "GET", method: http.MethodGet, status: 404, code: "NOT_FOUND"},
	}
	_, srv := embMock(t, "gemini")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, p := tt.method, tt.path
			if method == "" {
				method = http.MethodPost
			}
			if p == "" {
				p = path
			}
			res, err := embPost(t, context.Background(), srv, method, p, tt.body, append(embAuth("gemini"), tt.hdr...)...)
			if err != nil {
				t.Fatal(err)
			}
			e := gmErrorOf(t, res.body)
			if res.status != tt.status || e.Code != tt.status || e.Status != tt.code || !strings.Contains(e.Message, tt.msgHas) {
				t.Errorf("status %d, error %s", res.status, res.body)
			}
			if tt.field != "" && !e.has("BadRequest", "fieldViolations", tt.field) {
				t.Errorf("no fieldViolation for %q: %s", tt.field, res.body)
			}
			if tt.reason != "" && !e.has("ErrorInfo", "reason", tt.reason) {
				t.Errorf("no ErrorInfo reason %q: %s", tt.reason, res.body)
			}
		})
	}
}

type gmErrorBody struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details"`
}

func gmErrorOf(t *testing.T, body []byte) gmErrorBody {
	t.Helper()
	var e struct {
		Error gmErrorBody `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error
}

// has reports whether a detail of the google.rpc type typ mentions want
// under key (for fieldViolations, as a field).
func (e gmErrorBody) has(typ, key, want string) bool {
	for _, d := range e.Details {
		if d["@type"] != "type.googleapis.com/google.rpc."+typ {
			continue
		}
		b, _ := json.Marshal(d[key])
		if strings.Contains(string(b), jsonText(want)) {
			return true
		}
	}
	return false
}

type titanAnswer struct {
	Embedding           []float32                  `json:"embedding"`
	EmbeddingsByType    map[string]json.RawMessage `json:"embeddingsByType"`
	InputTextTokenCount *int                       `json:"inputTextTokenCount"`
}

type cohereAnswer struct {
	ID           string          `json:"id"`
	Texts        []string        `json:"texts"`
	Embeddings   json.RawMessage `json:"embeddings"`
	ResponseType string          `json:"response_type"`
}

func TestEmbedBedrock(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		body   string
		hdr    []string
		cohere bool
		byType bool
		n      int
		dims   int
		unit   bool
		tokens int
	}{
		{name: "titan", model: "amazon.titan-embed-text-v2:0", body: `{"inputText":"hello world"}`, n: 1, dims: 8, unit: true, tokens: 3},
		{name: "titan v1", model: "amazon.titan-embed-text-v1", body: `{"inputText":"hi"}`, n: 1, dims: 8, unit: true, tokens: 1},
		{name: "titan ARN", model: embTitanARN, body: `{"inputText":"hello world","dimensions":32,"normalize":true}`, n: 1, dims: 32, unit: true, tokens: 3},
		{name: "titan not normalized", model: "amazon.titan-embed-text-v2:0", body: `{"inputText":"hello world","normalize":false}`, n: 1, dims: 8, tokens: 3},
		{name: "titan by type", model: "amazon.titan-embed-text-v2:0", body: `{"inputText":"hello","embeddingTypes":["float","binary"]}`, byType: true, n: 1, dims: 8, unit: true, tokens: 2},
		{name: "titan SigV4", model: "amazon.titan-embed-text-v2:0", body: `{"inputText":"hello"}`, hdr: []string{"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=00"}, n: 1, dims: 8, unit: true, tokens: 2},
		{name: "cohere", model: "cohere.embed-english-v3", body: `{"texts":["alpha","beta"],"input_type":"search_document"}`, cohere: true, n: 2, dims: 8, unit: true, tokens: 3},
		{name: "cohere ARN", model: embCohereARN, body: `{"texts":["alpha"],"input_type":"search_query","truncate":"END"}`, cohere: true, n: 1, dims: 8, unit: true, tokens: 2},
		{name: "cohere profile ARN", model: "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.cohere.embed-multilingual-v3", body: `{"texts":["alpha"],"input_type":"clustering"}`, cohere: true, n: 1, dims: 8, unit: true, tokens: 2},
		{name: "cohere by type", model: "cohere.embed-english-v3", body: `{"texts":["alpha","beta","c"],"input_type":"classification","embedding_types":["float"]}`, cohere: true, byType: true, n: 3, dims: 8, unit: true, tokens: 4},
	}
	m, srv := embMock(t, "bedrock")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := embModelPath(tt.model)
			res := embDo(t, srv, path, tt.body, append(embAuth("bedrock"), tt.hdr...)...)
			if res.status != 200 || res.readErr != nil {
				t.Fatalf("%s: status %d err %v: %s", path, res.status, res.readErr, res.body)
			}
			if res.header.Get("x-amzn-RequestId") == "" || res.header.Get("X-Amzn-Bedrock-Input-Token-Count") != fmt.Sprint(tt.tokens) {
				t.Errorf("headers %v", res.header)
			}
			var vs [][]float32
			if tt.cohere {
				var a cohereAnswer
				if err := json.Unmarshal(res.body, &a); err != nil {
					t.Fatal(err)
				}
				if len(a.ID) != 36 || len(a.Texts) != tt.n {
					t.Errorf("id %q texts %q", a.ID, a.Texts)
				}
				raw := a.Embeddings
				if tt.byType {
					var by map[string]json.RawMessage
					if a.ResponseType != "embeddings_by_type" || json.Unmarshal(raw, &by) != nil {
						t.Fatalf("answer %s", res.body)
					}
					raw = by["float"]
				} else if a.ResponseType != "embeddings_floats" {
					t.Errorf("response_type %q", a.ResponseType)
				}
				if err := json.Unmarshal(raw, &vs); err != nil {
					t.Fatalf("embeddings %s: %v", raw, err)
				}
			} else {
				var a titanAnswer
				if err := json.Unmarshal(res.body, &a); err != nil {
					t.Fatal(err)
				}
				if a.InputTextTokenCount == nil || *a.InputTextTokenCount != tt.tokens {
					t.Errorf("inputTextTokenCount %v, want %d: %s", a.InputTextTokenCount, tt.tokens, res.body)
				}
				if tt.byType {
					var f []float32
					var bits []int
					if json.Unmarshal(a.EmbeddingsByType["float"], &f) != nil || !embEqual(f, a.Embedding) ||
						json.Unmarshal(a.EmbeddingsByType["binary"], &bits) != nil || len(bits) != len(f) {
						t.Errorf("embeddingsByType %s", res.body)
					}
				} else if a.EmbeddingsByType != nil {
					t.Errorf("embeddingsByType not asked for: %s", res.body)
				}
				vs = [][]float32{a.Embedding}
			}
			if len(vs) != tt.n {
				t.Fatalf("%d vectors, want %d", len(vs), tt.n)
			}
			for _, v := range vs {
				embCheckVector(t, v, tt.dims, tt.unit)
			}
		})
	}
	if got := m.Requests()[2].Path; got != "/model/"+embTitanARN+"/invoke" {
		t.Errorf("recorded path %q", got)
	}
}

func TestEmbedBedrockErrors(t *testing.T) {
	const titan, cohere = "amazon.titan-embed-text-v2:0", "cohere.embed-english-v3"
	tests := []struct {
		name   string
		method string
		model  string
		body   string
		hdr    []string
		status int
		typ    string
		msgHas string
	}{
		{name: "not json", model: titan, body: `{`, status: 400, typ: "ValidationException", msgHas: "Malformed input request"},
		{name: "titan no inputText", model: titan, body: `{}`, status: 400, typ: "ValidationException", msgHas: "required key [inputText] not found"},
		{name: "titan empty inputText", model: titan, body: `{"inputText":""}`, status: 400, typ: "ValidationException", msgHas: "minLength"},
		{name: "titan inputText type", model: titan, body: `{"inputText":3}`, status: 400, typ: "ValidationException", msgHas: "expected type: String, found: Integer"},
		{name: "titan extraneous key", model: titan, body: `{"inputText":"a","texts":["a"]}`, status: 400, typ: "ValidationException", msgHas: "extraneous key [texts]"},
		{name: "titan dimensions zero", model: titan, body: `{"inputText":"a","dimensions":0}`, status: 400, typ: "ValidationException", msgHas: "#/dimensions"},
		{name: "titan dimensions too many", model: titan, body: `{"inputText":"a","dimensions":4097}`, status: 400, typ: "ValidationException", msgHas: "#/dimensions"},
		{name: "titan normalize type", model: titan, body: `{"inputText":"a","normalize":"yes"}`, status: 400, typ: "ValidationException", msgHas: "expected type: Boolean"},
		{name: "titan embedding type", model: titan, body: `{"inputText":"a","embeddingTypes":["int8"]}`, status: 400, typ: "ValidationException", msgHas: "not a valid enum value"},
		{name: "cohere Titan body", model: cohere, body: `{"inputText":"a"}`, status: 400, typ: "ValidationException", msgHas: "extraneous key [inputText]"},
		{name: "cohere no input_type", model: cohere, body: `{"texts":["a"]}`, status: 400, typ: "ValidationException", msgHas: "required key [input_type] not found"},
		{name: "cohere bad input_type", model: cohere, body: `{"texts":["a"],"input_type":"query"}`, status: 400, typ: "ValidationException", msgHas: "#/input_type"},
		{name: "cohere no texts", model: cohere, body: `{"texts":[],"input_type":"search_query"}`, status: 400, typ: "ValidationException", msgHas: "minimum item count"},
		{name: "cohere too many texts", model: cohere, body: `{"texts":["a"` + strings.Repeat(`,"a"`, brMaxCohereTexts) + `],"input_type":"search_query"}`, status: 400, typ: "ValidationException", msgHas: "maximum item count: 96, found: 97"},
		{name: "cohere int8", model: cohere, body: `{"texts":["a"],"input_type":"search_query","embedding_types":["int8"]}`, status: 400, typ: "ValidationException", msgHas: "float"},
		{name: "no auth", model: titan, body: `{"inputText":"a"}`, hdr: []string{"Authorization", ""}, status: 403, typ: "MissingAuthenticationTokenException"},
		{name: "wrong key", model: titan, body: `{"inputText":"a"}`, hdr: []string{"Authorization", "Bearer nope"}, status: 403, typ: "UnrecognizedClientException"},
		{name: "GET", method: http.MethodGet, model: titan, status: 405, typ: "UnknownOperationException"},
		{name: "not an embedding model", model: "anthropic.claude-3-haiku-20240307-v1:0", body: `{"inputText":"a"}`, status: 404, typ: "UnknownOperationException", msgHas: "Unknown operation POST /model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke"},
	}
	_, srv := embMock(t, "bedrock")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			res, err := embPost(t, context.Background(), srv, method, embModelPath(tt.model), tt.body, append(embAuth("bedrock"), tt.hdr...)...)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(res.body, &e); err != nil {
				t.Fatalf("body %s: %v", res.body, err)
			}
			typ, _, _ := strings.Cut(res.header.Get("X-Amzn-ErrorType"), ":")
			if res.status != tt.status || typ != tt.typ || !strings.Contains(e.Message, tt.msgHas) {
				t.Errorf("status %d type %q message %q", res.status, typ, e.Message)
			}
		})
	}
}

// embSample is one healthy embeddings request of a wire.
type embSample struct {
	kind, path, body string
}

var embSamples = []embSample{
	{"openai", "/v1/embeddings", `{"model":"text-embedding-3-small","input":["alpha","beta"]}`},
	{"gemini", "/v1beta/models/gemini-embedding-001:batchEmbedContents", `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"alpha"}]}}]}`},
	{"bedrock", embModelPath(embTitanARN), `{"inputText":"alpha"}`},
}

// embErrorShape reads an error answer as (type, code-or-reason) in the
// wire's own shape, and fails when the body is not that shape.
func embErrorShape(t *testing.T, kind string, res result) (typ, code string) {
	t.Helper()
	switch kind {
	case "openai":
		var e struct {
			Error *struct {
				Type string  `json:"type"`
				Code *string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(res.body, &e) != nil || e.Error == nil {
			t.Fatalf("not an OpenAI error: %s", res.body)
		}
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		return e.Error.Type, code
	case "gemini":
		e := gmErrorOf(t, res.body)
		if e.Code != res.status {
			t.Errorf("error code %d, HTTP status %d", e.Code, res.status)
		}
		for _, d := range e.Details {
			if r, ok := d["retryDelay"].(string); ok {
				code = r
			}
		}
		return e.Status, code
	}
	var e struct {
		Message *string `json:"message"`
	}
	if json.Unmarshal(res.body, &e) != nil || e.Message == nil {
		t.Fatalf("not a Bedrock error: %s", res.body)
	}
	typ, _, _ = strings.Cut(res.header.Get("X-Amzn-ErrorType"), ":")
	return typ, ""
}

func TestEmbedFaults(t *testing.T) {
	tests := []struct {
		fault string
		// want per kind: HTTP status, error type, and code (OpenAI code,
		// Gemini RetryInfo delay); status 200 is a success.
		want  map[string][3]string
		retry string // the retry-after header (OpenAI, Bedrock)
	}{
		{fault: "status=429;retry_after=7", retry: "7", want: map[string][3]string{
			"openai": {"429", "tokens", "rate_limit_exceeded"}, "gemini": {"429", "RESOURCE_EXHAUSTED", "7s"}, "bedrock": {"429", "ThrottlingException"}}},
		{fault: "status=503", want: map[string][3]string{
			"openai": {"503", "server_error"}, "gemini": {"503", "UNAVAILABLE"}, "bedrock": {"503", "ServiceUnavailableException"}}},
		{fault: "status=500;message=boom", want: map[string][3]string{
			"openai": {"500", "server_error"}, "gemini": {"500", "INTERNAL"}, "bedrock": {"500", "InternalServerException"}}},
		{fault: "status=404", want: map[string][3]string{
			"openai": {"404", "invalid_request_error", "model_not_found"}, "gemini": {"404", "NOT_FOUND"}, "bedrock": {"404", "ResourceNotFoundException"}}},
		{fault: "error_after=1", want: map[string][3]string{
			"openai": {"500", "server_error"}, "gemini": {"500", "INTERNAL"}, "bedrock": {"503", "ServiceUnavailableException"}}},
		{fault: "p=0;status=500", want: map[string][3]string{"openai": {"200"}, "gemini": {"200"}, "bedrock": {"200"}}},
		{fault: "delay=30ms", want: map[string][3]string{"openai": {"200"}, "gemini": {"200"}, "bedrock": {"200"}}},
		{fault: "tokens=3;refusal;no_terminal;event_delay=1s", want: map[string][3]string{"openai": {"200"}, "gemini": {"200"}, "bedrock": {"200"}}},
	}
	for _, s := range embSamples {
		t.Run(s.kind, func(t *testing.T) {
			m, srv := embMock(t, s.kind)
			healthy := embDo(t, srv, s.path, s.body, embAuth(s.kind)...)
			if healthy.status != 200 {
				t.Fatalf("healthy: %d %s", healthy.status, healthy.body)
			}
			for _, tt := range tests {
				t.Run(tt.fault, func(t *testing.T) {
					before := m.Count()
					start := time.Now()
					res := embDo(t, srv, s.path, s.body, append(embAuth(s.kind), headerFault, tt.fault)...)
					want := tt.want[s.kind]
					if fmt.Sprint(res.status) != want[0] {
						t.Fatalf("status %d, want %s: %s", res.status, want[0], res.body)
					}
					if m.Count() != before+1 {
						t.Errorf("Count %d, want %d", m.Count(), before+1)
					}
					if res.status == 200 {
						if !json.Valid(res.body) || res.readErr != nil {
							t.Errorf("body %s err %v", res.body, res.readErr)
						}
						if strings.HasPrefix(tt.fault, "delay=") && time.Since(start) < 30*time.Millisecond {
							t.Errorf("answered after %v, before the delay", time.Since(start))
						}
						return
					}
					typ, code := embErrorShape(t, s.kind, res)
					if typ != want[1] || code != want[2] {
						t.Errorf("error (%q, %q), want (%q, %q): %s", typ, code, want[1], want[2], res.body)
					}
					if tt.retry != "" && s.kind != "gemini" && res.header.Get("retry-after") != tt.retry {
						t.Errorf("retry-after %q, want %q", res.header.Get("retry-after"), tt.retry)
					}
					if strings.Contains(tt.fault, "message=") && !strings.Contains(string(res.body), "boom") {
						t.Errorf("message not overridden: %s", res.body)
					}
				})
			}
			t.Run("die_after", func(t *testing.T) {
				res := embDo(t, srv, s.path, s.body, append(embAuth(s.kind), headerFault, "die_after=1")...)
				if res.status != 200 || res.readErr == nil {
					t.Fatalf("status %d err %v: the body should break", res.status, res.readErr)
				}
				if len(res.body) > len(healthy.body)/2 || !strings.HasPrefix(string(healthy.body), string(res.body)) {
					t.Errorf("got %q, want at most the first half of %q", res.body, healthy.body)
				}
			})
			t.Run("malformed_after", func(t *testing.T) {
				res := embDo(t, srv, s.path, s.body, append(embAuth(s.kind), headerFault, "malformed_after=2")...)
				if res.status != 200 || res.readErr != nil || json.Valid(res.body) {
					t.Fatalf("status %d err %v body %q: want a clean, truncated body", res.status, res.readErr, res.body)
				}
				if string(res.body) != string(healthy.body[:len(healthy.body)/2]) {
					t.Errorf("got %q, want the first half of %q", res.body, healthy.body)
				}
			})
			t.Run("stall", func(t *testing.T) {
				for _, fault := range []string{"stall", "stall_after=1"} {
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					res, err := embPost(t, ctx, srv, http.MethodPost, s.path, s.body, append(embAuth(s.kind), headerFault, fault)...)
					cancel()
					if err == nil && res.readErr == nil {
						t.Errorf("%s: answered %d %s", fault, res.status, res.body)
					}
				}
				deadline := time.Now().Add(5 * time.Second)
				for m.Active() != 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if m.Active() != 0 {
					t.Errorf("%d requests still active after their clients left", m.Active())
				}
			})
			t.Run("mock-wide times", func(t *testing.T) {
				if err := m.SetFault("status=503;times=2"); err != nil {
					t.Fatal(err)
				}
				defer m.SetFault("")
				m.Reset()
				var got []int
				for range 3 {
					got = append(got, embDo(t, srv, s.path, s.body, embAuth(s.kind)...).status)
				}
				if fmt.Sprint(got) != "[503 503 200]" || m.Count() != 3 {
					t.Errorf("statuses %v, Count %d", got, m.Count())
				}
				for _, r := range m.Requests() {
					if !strings.Contains(r.Path, "mbed") && !strings.HasSuffix(r.Path, "/invoke") {
						t.Errorf("recorded path %q", r.Path)
					}
				}
			})
			t.Run("times in header", func(t *testing.T) {
				res := embDo(t, srv, s.path, s.body, append(embAuth(s.kind), headerFault, "status=500;times=1")...)
				if res.status != 400 {
					t.Fatalf("status %d: %s", res.status, res.body)
				}
				embErrorShape(t, s.kind, res)
			})
		})
	}
}

// TestEmbedVectorsAgree: a text has one vector, whichever wire embeds it.
func TestEmbedVectorsAgree(t *testing.T) {
	text := "The quick brown fox"
	want := embedVector(text, 12, true)
	embCheckVector(t, want, 12, true)
	if embEqual(want, embedVector(text+".", 12, true)) {
		t.Fatal("different texts, same vector")
	}
	// Before scaling, a shorter vector is a prefix of a longer one.
	short, long := embedVector(text, 4, false), embedVector(text, 12, false)
	if !embEqual(short, long[:4]) {
		t.Errorf("raw %v is not a prefix of %v", short, long)
	}

	_, oa := embMock(t, "openai")
	res := embDo(t, oa, "/v1/embeddings", `{"model":"m","input":`+jsonText(text)+`,"dimensions":12}`, embAuth("openai")...)
	var a oaEmbedAnswer
	json.Unmarshal(res.body, &a)
	if vs := a.vectors(t); len(vs) != 1 || !embEqual(vs[0], want) {
		t.Errorf("openai %v, want %v", vs, want)
	}

	_, gm := embMock(t, "gemini")
	res = embDo(t, gm, "/v1beta/models/m:embedContent", `{"content":{"parts":[{"text":`+jsonText(text)+`}]},"outputDimensionality":12}`, embAuth("gemini")...)
	var g gmEmbedAnswer
	json.Unmarshal(res.body, &g)
	if g.Embedding == nil || !embEqual(g.Embedding.Values, want) {
		t.Errorf("gemini %s, want %v", res.body, want)
	}

	_, br := embMock(t, "bedrock")
	res = embDo(t, br, embModelPath("amazon.titan-embed-text-v2:0"), `{"inputText":`+jsonText(text)+`,"dimensions":12}`, embAuth("bedrock")...)
	var ti titanAnswer
	json.Unmarshal(res.body, &ti)
	if !embEqual(ti.Embedding, want) {
		t.Errorf("titan %v, want %v", ti.Embedding, want)
	}
	res = embDo(t, br, embModelPath("amazon.titan-embed-text-v2:0"), `{"inputText":`+jsonText(text)+`,"dimensions":12,"normalize":false}`, embAuth("bedrock")...)
	json.Unmarshal(res.body, &ti)
	if !embEqual(ti.Embedding, long) {
		t.Errorf("titan normalize:false %v, want %v", ti.Embedding, long)
	}
}

func TestEmbedOpenAISDK(t *testing.T) {
	client, m := openAIClient(t, Options{APIKey: embOAKey})
	ctx := context.Background()
	texts := []string{"alpha", "beta gamma"}
	params := openai.EmbeddingNewParams{
		Model:      openai.EmbeddingModelTextEmbedding3Small,
		Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Dimensions: openai.Int(12),
	}
	tests := []struct {
		name   string
		format openai.EmbeddingNewParamsEncodingFormat
	}{
		{"floats", openai.EmbeddingNewParamsEncodingFormatFloat},
		{"base64", openai.EmbeddingNewParamsEncodingFormatBase64},
		{"default", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := params
			p.EncodingFormat = tt.format
			res, err := client.Embeddings.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != openai.EmbeddingModelTextEmbedding3Small || len(res.Data) != len(texts) || res.Usage.PromptTokens != 5 || res.Usage.TotalTokens != 5 {
				t.Fatalf("answer %s", res.RawJSON())
			}
			for i, d := range res.Data {
				want := embedVector(texts[i], 12, true)
				if d.Index != int64(i) || len(d.Embedding) != len(want) {
					t.Fatalf("datum %d: index %d, %d values", i, d.Index, len(d.Embedding))
				}
				for k := range want {
					if float32(d.Embedding[k]) != want[k] {
						t.Fatalf("datum %d value %d: %v, want %v", i, k, d.Embedding[k], want[k])
					}
				}
			}
			if tt.format == openai.EmbeddingNewParamsEncodingFormatBase64 && !strings.Contains(res.RawJSON(), `"embedding":"`) {
				t.Errorf("base64 asked, floats sent: %s", res.RawJSON())
			}
		})
	}
	t.Run("token ids", func(t *testing.T) {
		res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2, 3}, {4}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 2 || res.Usage.PromptTokens != 4 || len(res.Data[0].Embedding) != embedDefaultDims {
			t.Errorf("answer %s", res.RawJSON())
		}
	})
	t.Run("fault", func(t *testing.T) {
		_, err := client.Embeddings.New(ctx, params, option.WithHeader("X-Mock-Fault", "status=429;error_type=requests"))
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Code != "rate_limit_exceeded" || ae.Type != "requests" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("validation", func(t *testing.T) {
		p := params
		p.Dimensions = openai.Int(0)
		_, err := client.Embeddings.New(ctx, p)
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Param != "dimensions" {
			t.Fatalf("err = %v", err)
		}
	})
	if m.Count() != len(tests)+3 {
		t.Errorf("Count %d, want %d", m.Count(), len(tests)+3)
	}
}

func TestEmbedGeminiSDK(t *testing.T) {
	client, m := geminiClient(t, Options{}, "")
	ctx := context.Background()
	contents := []*genai.Content{genai.NewContentFromText("alpha", genai.RoleUser), genai.NewContentFromText("beta", genai.RoleUser)}
	dims := int32(12)
	tests := []struct {
		name string
		cfg  *genai.EmbedContentConfig
		dims int
	}{
		{"default", nil, embedDefaultDims},
		{"dimensions", &genai.EmbedContentConfig{OutputDimensionality: &dims, TaskType: "RETRIEVAL_DOCUMENT", Title: "doc"}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := client.Models.EmbedContent(ctx, "gemini-embedding-001", contents, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Embeddings) != len(contents) {
				t.Fatalf("%d embeddings", len(res.Embeddings))
			}
			for i, e := range res.Embeddings {
				if want := embedVector(contents[i].Parts[0].Text, tt.dims, true); !embEqual(e.Values, want) {
					t.Errorf("embedding %d: %v, want %v", i, e.Values, want)
				}
			}
		})
	}
	t.Run("fault", func(t *testing.T) {
		cfg := &genai.EmbedContentConfig{HTTPOptions: &genai.HTTPOptions{Headers: http.Header{"X-Mock-Fault": {"status=429;retry_after=3"}}}}
		_, err := client.Models.EmbedContent(ctx, "gemini-embedding-001", contents, cfg)
		ae := gmAPIError(t, err)
		if ae.Code != 429 || ae.Status != "RESOURCE_EXHAUSTED" || gmDetailOf(ae, "RetryInfo")["retryDelay"] != "3s" {
			t.Errorf("APIError %+v", ae)
		}
	})
	t.Run("validation", func(t *testing.T) {
		bad := int32(5000)
		_, err := client.Models.EmbedContent(ctx, "gemini-embedding-001", contents, &genai.EmbedContentConfig{OutputDimensionality: &bad})
		if ae := gmAPIError(t, err); ae.Code != 400 || ae.Status != "INVALID_ARGUMENT" {
			t.Errorf("APIError %+v", ae)
		}
	})
	if m.Count() != len(tests)+2 {
		t.Errorf("Count %d, want %d", m.Count(), len(tests)+2)
	}
}

func TestEmbedBedrockSDK(t *testing.T) {
	client, m := bedrockClient(t, Options{APIKey: embBRKey}) // SigV4-signed
	ctx := context.Background()
	tests := []struct {
		name  string
		model string
		body  string
		check func(t *testing.T, out []byte)
	}{
		{"titan ARN", embTitanARN, `{"inputText":"alpha","dimensions":16}`, func(t *testing.T, out []byte) {
			var a titanAnswer
			if err := json.Unmarshal(out, &a); err != nil {
				t.Fatal(err)
			}
			if !embEqual(a.Embedding, embedVector("alpha", 16, true)) || a.InputTextTokenCount == nil || *a.InputTextTokenCount != 2 {
				t.Errorf("answer %s", out)
			}
		}},
		{"cohere ARN", embCohereARN, `{"texts":["alpha","beta"],"input_type":"search_document"}`, func(t *testing.T, out []byte) {
			var a struct {
				Embeddings [][]float32 `json:"embeddings"`
			}
			if err := json.Unmarshal(out, &a); err != nil {
				t.Fatal(err)
			}
			if len(a.Embeddings) != 2 || !embEqual(a.Embeddings[1], embedVector("beta", embedDefaultDims, true)) {
				t.Errorf("answer %s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := client.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{
				ModelId: aws.String(tt.model), Body: []byte(tt.body),
				ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
			})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToString(out.ContentType) != "application/json" {
				t.Errorf("content type %q", aws.ToString(out.ContentType))
			}
			tt.check(t, out.Body)
		})
	}
	errTests := []struct {
		name  string
		body  string
		fault string
		check func(error) bool
	}{
		{"throttled", `{"inputText":"alpha"}`, "status=429", func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }},
		{"unavailable", `{"inputText":"alpha"}`, "status=503", func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }},
		{"bad body", `{"texts":["alpha"]}`, "", func(err error) bool {
			var e *types.ValidationException
			return errors.As(err, &e) && strings.Contains(e.ErrorMessage(), "extraneous key [texts]")
		}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*bedrockruntime.Options)
			if tt.fault != "" {
				opts = append(opts, withFault(tt.fault))
			}
			_, err := client.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{
				ModelId: aws.String(embTitanARN), Body: []byte(tt.body), ContentType: aws.String("application/json"),
			}, opts...)
			if !tt.check(err) {
				t.Errorf("err = %T %v", err, err)
			}
		})
	}
	if m.Count() != len(tests)+len(errTests) {
		t.Errorf("Count %d, want %d", m.Count(), len(tests)+len(errTests))
	}
}
