package server_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Embeddings through openai-go: every provider kind that has them, a 529
// primary failed over, the vectors in order, and the ledger's one charge.
func TestConformanceEmbeddings(t *testing.T) {
	h := newConformanceHarness(t)
	ctx := context.Background()
	c := h.openai()
	inputs := []string{"the first text", "a second, longer text to embed", "third"}
	for _, model := range []string{confEmbed, confEmbedGemini, confEmbedTitan, confEmbedCohere} {
		t.Run(model, func(t *testing.T) {
			var resp *http.Response
			e, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: model,
				Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs}}, option.WithResponseInto(&resp))
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Data) != len(inputs) || e.Usage.PromptTokens <= 0 || e.Model != model {
				t.Fatalf("%d vectors for %d inputs, %d tokens, model %q", len(e.Data), len(inputs), e.Usage.PromptTokens, e.Model)
			}
			for i, d := range e.Data {
				if d.Index != int64(i) || len(d.Embedding) == 0 {
					t.Errorf("data[%d]: index %d, %d values", i, d.Index, len(d.Embedding))
				}
			}
			if model == confEmbed {
				if got := resp.Header.Get("X-Spillway-Trail"); got != "flaky=provider_unavailable, openai=ok" {
					t.Errorf("trail %q", got)
				}
				n, row, atts := h.rows(t, resp.Header.Get("X-Request-Id"))
				if n != 1 || len(atts) != 2 || atts[0].cost != 0 || row.cost == 0 || row.cost != atts[1].cost || row.in != int(e.Usage.PromptTokens) || row.out != 0 {
					t.Errorf("ledger: %d rows %+v, attempts %+v", n, row, atts)
				}
			}
		})
	}
	t.Run("the same text, the same vector, whichever provider", func(t *testing.T) {
		one := func(model string) []float64 {
			e, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: model, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("same")}})
			if err != nil {
				t.Fatal(err)
			}
			return e.Data[0].Embedding
		}
		a, b := one(confEmbed), one(confEmbedGemini)
		if len(a) != len(b) || math.Abs(a[0]-b[0]) > 1e-6 {
			t.Errorf("%v vs %v", a, b)
		}
	})
	t.Run("dimensions and base64", func(t *testing.T) {
		resp, err := h.post("/v1/embeddings", `{"model":"`+confEmbed+`","input":"hi","dimensions":16,"encoding_format":"base64"}`)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Data []struct{ Embedding string } `json:"data"`
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(body, &out); err != nil || len(out.Data) != 1 {
			t.Fatalf("%s", body)
		}
		raw, err := base64.StdEncoding.DecodeString(out.Data[0].Embedding)
		if err != nil || len(raw) != 16*4 {
			t.Fatalf("base64 of %d bytes, want 16 float32: %v", len(raw), err)
		}
		if f := math.Float32frombits(binary.LittleEndian.Uint32(raw)); math.IsNaN(float64(f)) || f < -1 || f > 1 {
			t.Errorf("first value %v", f)
		}
	})
	t.Run("token ids reach only a rung whose tokenizer they belong to", func(t *testing.T) {
		_, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: confEmbedGemini,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2, 3}}})
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "unsupported_request" || !strings.Contains(ae.Message, "token ids") {
			t.Errorf("token ids to Gemini: %v", err)
		}
		if _, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: confEmbed,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2, 3}}}); err != nil {
			t.Errorf("token ids to an OpenAI-format pool: %v", err)
		}
	})
	t.Run("the wrong kind of model, both ways", func(t *testing.T) {
		_, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: confOpenAI, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "wrong_model_kind" {
			t.Errorf("embeddings from a chat model: %v", err)
		}
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: confEmbed,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "wrong_model_kind" {
			t.Errorf("chat with an embeddings model: %v", err)
		}
	})
	t.Run("bad input is answered at once", func(t *testing.T) {
		for _, body := range []string{
			`{"model":"` + confEmbed + `"}`,
			`{"model":"` + confEmbed + `","input":""}`,
			`{"model":"` + confEmbed + `","input":[]}`,
			`{"model":"` + confEmbed + `","input":"x","dimensions":0}`,
			`{"model":"` + confEmbed + `","input":"x","encoding_format":"hex"}`,
			`{"model":"` + confEmbed + `","input":"x","stream":true}`,
			`{"model":"` + confEmbed + `","input":[` + strings.Repeat(`"x",`, 2048) + `"x"]}`,
		} {
			resp, err := h.post("/v1/embeddings", body)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request_error"`) {
				t.Errorf("%.80s: %d %s", body, resp.StatusCode, b)
			}
		}
	})
}
