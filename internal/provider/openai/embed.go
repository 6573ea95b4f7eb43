package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/provider"
)

const embeddingsPath = "/v1/embeddings"

// embed sends an embeddings request (texts or token ids) and reads the
// vectors back as floats.
func embed(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	e := req.Embed
	b := make([]byte, 0, 256+req.InputBytes()*9/8)
	b = append(b, `{"model":`...)
	b = jsonwrite.AppendString(b, t.Model)
	b = append(b, `,"input":[`...)
	for i, s := range e.Texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwrite.AppendString(b, s)
	}
	for i, ids := range e.Tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for k, id := range ids {
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(id), 10)
		}
		b = append(b, ']')
	}
	b = append(b, ']')
	if e.Dimensions > 0 {
		b = append(b, `,"dimensions":`...)
		b = strconv.AppendInt(b, int64(e.Dimensions), 10)
	}
	b = append(b, `,"encoding_format":"float"}`...)
	resp, err := provider.Post(ctx, t, t.BaseURL+embeddingsPath, b, func(h http.Header) {
		if t.APIKey != "" {
			h.Set("Authorization", "Bearer "+t.APIKey)
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
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, failure.Malformed("embeddings answer", err)
	}
	n := e.Len()
	vectors := make([][]float32, n)
	for k, d := range out.Data {
		i := k
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n || vectors[i] != nil {
			return nil, failure.Malformed("embeddings answer", provider.ErrEmbeddingIndex)
		}
		vectors[i] = d.Embedding
	}
	tokens := -1
	if u := out.Usage; u != nil {
		if u.PromptTokens < 0 || u.PromptTokens > provider.MaxEmbeddingTokens {
			return nil, failure.Malformed("embeddings answer", provider.ErrEmbeddingUsage)
		}
		tokens = u.PromptTokens
	}
	return provider.Embedded(vectors, tokens), nil
}
