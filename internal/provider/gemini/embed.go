package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/provider"
)

// maxBatch is Gemini's limit of requests in one batchEmbedContents call.
const maxBatch = 100

// embed sends the texts through batchEmbedContents, in batches of at most
// 100 (Gemini's limit). Gemini reports no token usage for embeddings: the
// gateway's estimate is billed (the usage is then marked unreported).
func embed(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	e := req.Embed
	model := t.Model
	if !strings.Contains(model, "/") {
		model = "models/" + model
	}
	url := t.BaseURL + "/" + apiVersion + "/" + model + ":batchEmbedContents"
	vectors := make([][]float32, 0, len(e.Texts))
	for start := 0; start < len(e.Texts); start += maxBatch {
		batch := e.Texts[start:min(start+maxBatch, len(e.Texts))]
		got, err := embedBatch(ctx, t, url, model, batch, e.Dimensions)
		if err != nil {
			return nil, err
		}
		vectors = append(vectors, got...)
	}
	return provider.Embedded(vectors, -1), nil
}

// embedBatch embeds one batch of texts.
func embedBatch(ctx context.Context, t *provider.Target, url, model string, texts []string, dims int) ([][]float32, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"requests":[`...)
	for i, s := range texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"model":`...)
		b = jsonwrite.AppendString(b, model)
		b = append(b, `,"content":{"parts":[{"text":`...)
		b = jsonwrite.AppendString(b, s)
		b = append(b, `}]}`...)
		if dims > 0 {
			b = append(b, `,"outputDimensionality":`...)
			b = strconv.AppendInt(b, int64(dims), 10)
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	resp, err := provider.Post(ctx, t, url, b, func(h http.Header) {
		if t.APIKey != "" {
			h.Set("X-Goog-Api-Key", t.APIKey)
		}
		h.Set("Accept", "application/json")
	})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, provider.ErrorAnswer(resp, parseErrorBody)
	}
	body, err := provider.ReadBody(resp)
	if err != nil {
		return nil, err
	}
	var out struct {
		Embeddings []struct {
			Values []float32 `json:"values"`
		} `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, failure.Malformed("batchEmbedContents answer", err)
	}
	if len(out.Embeddings) != len(texts) {
		return nil, failure.Malformed("batchEmbedContents answer", provider.ErrEmbeddingIndex)
	}
	vectors := make([][]float32, len(out.Embeddings))
	for i := range out.Embeddings {
		vectors[i] = out.Embeddings[i].Values
	}
	return vectors, nil
}
