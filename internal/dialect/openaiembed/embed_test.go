package openaiembed

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, body string
		want       *canonical.EmbedInput
		param      string // of the 400; "" when accepted
	}{
		{"a string", `{"model":"m","input":"hello"}`, &canonical.EmbedInput{Texts: []string{"hello"}}, ""},
		{"strings, base64, dimensions, user", `{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":64,"user":"u"}`,
			&canonical.EmbedInput{Texts: []string{"a", "b"}, Base64: true, Dimensions: 64}, ""},
		{"token ids", `{"model":"m","input":[1,2,3]}`, &canonical.EmbedInput{Tokens: [][]int{{1, 2, 3}}}, ""},
		{"lists of token ids", `{"model":"m","input":[[1],[2,3]],"encoding_format":"float"}`, &canonical.EmbedInput{Tokens: [][]int{{1}, {2, 3}}}, ""},
		{"no model", `{"input":"x"}`, nil, "model"},
		{"empty model", `{"model":"","input":"x"}`, nil, "model"},
		{"no input", `{"model":"m"}`, nil, "input"},
		{"null input", `{"model":"m","input":null}`, nil, "input"},
		{"empty string", `{"model":"m","input":""}`, nil, "input"},
		{"empty list", `{"model":"m","input":[]}`, nil, "input"},
		{"an empty string in the list", `{"model":"m","input":["a",""]}`, nil, "input[1]"},
		{"mixed list", `{"model":"m","input":["a",1]}`, nil, "input[1]"},
		{"negative token id", `{"model":"m","input":[1,-2]}`, nil, "input"},
		{"an empty list of ids", `{"model":"m","input":[[1],[]]}`, nil, "input[1]"},
		{"too many inputs", `{"model":"m","input":[` + strings.Repeat(`"x",`, MaxInputs) + `"x"]}`, nil, "input"},
		{"input an object", `{"model":"m","input":{}}`, nil, "input"},
		{"zero dimensions", `{"model":"m","input":"x","dimensions":0}`, nil, "dimensions"},
		{"huge dimensions", `{"model":"m","input":"x","dimensions":1000000}`, nil, "dimensions"},
		{"unknown encoding", `{"model":"m","input":"x","encoding_format":"hex"}`, nil, "encoding_format"},
		{"unknown field", `{"model":"m","input":"x","stream":true}`, nil, "stream"},
		{"model a number", `{"model":1,"input":"x"}`, nil, "model"},
		{"not JSON", `{"model":`, nil, ""},
		{"two values", `{"model":"m","input":"x"} {}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, p := New().Decode([]byte(tt.body), nil)
			if tt.want != nil {
				if p != nil {
					t.Fatalf("refused: %v", p)
				}
				if !reflect.DeepEqual(req.Embed, tt.want) || req.Model != "m" || req.MaxTokens != 1 {
					t.Fatalf("got %+v (model %q, max %d), want %+v", req.Embed, req.Model, req.MaxTokens, tt.want)
				}
				return
			}
			if p == nil || p.Status != 400 || p.Param != tt.param {
				t.Fatalf("got %+v, want a 400 naming %q", p, tt.param)
			}
		})
	}
}

func TestAppendResponse(t *testing.T) {
	resp := &canonical.Response{Embeddings: [][]float32{{0.5, -0.25}, {1, 0}}, Usage: canonical.Usage{InputTokens: 7}}
	for _, b64 := range []bool{false, true} {
		req := &canonical.Request{Embed: &canonical.EmbedInput{Texts: []string{"a", "b"}, Base64: b64}}
		out := New().AppendResponse(nil, dialect.Meta{Model: "emb"}, req, resp)
		var v struct {
			Object string
			Data   []struct {
				Object    string
				Index     int
				Embedding json.RawMessage
			}
			Model string
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if v.Object != "list" || v.Model != "emb" || len(v.Data) != 2 || v.Usage.PromptTokens != 7 || v.Usage.TotalTokens != 7 {
			t.Fatalf("%s", out)
		}
		for i, d := range v.Data {
			var got []float32
			if b64 {
				var s string
				_ = json.Unmarshal(d.Embedding, &s)
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; k+4 <= len(raw); k += 4 {
					got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(raw[k:])))
				}
			} else if err := json.Unmarshal(d.Embedding, &got); err != nil {
				t.Fatal(err)
			}
			if d.Index != i || d.Object != "embedding" || !reflect.DeepEqual(got, resp.Embeddings[i]) {
				t.Errorf("base64 %v, data[%d] = %v, want %v", b64, i, got, resp.Embeddings[i])
			}
		}
	}
}

// FuzzDecode: any body is answered, never a panic; what is accepted is
// within the bounds.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"model":"m","input":"x"}`, `{"model":"m","input":[[1,2],[3]]}`, `{"model":"m","input":["a"],"dimensions":3,"encoding_format":"base64"}`, `[]`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, p := New().Decode([]byte(body), nil)
		if (req == nil) == (p == nil) {
			t.Fatalf("request %v and problem %v", req, p)
		}
		if req != nil {
			e := req.Embed
			if e.Len() == 0 || e.Len() > MaxInputs || e.Dimensions < 0 || e.Dimensions > MaxDimensions {
				t.Fatalf("accepted out of bounds: %+v", e)
			}
		}
	})
}
