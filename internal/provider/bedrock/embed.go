package bedrock

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Bedrock's embedding models take a body of their own through InvokeModel:
// Cohere's a batch of texts (at most 96), Titan's one text per call.
const maxTitanTexts = 64 // Cohere's limit, 96, is looser

// isCohere tells the two body shapes apart by the model id (a foundation
// model id or an ARN naming one).
func isCohere(model string) bool { return strings.Contains(model, "cohere.") }

// embedCheck names what an embeddings request asks that no Bedrock
// embedding model does; the rung is then skipped.
func embedCheck(req *canonical.Request) string {
	e := req.Embed
	switch {
	case len(e.Tokens) > 0:
		return "Bedrock embeds text only, not token ids"
	case len(e.Texts) > maxTitanTexts:
		return "Bedrock's embedding models take at most " + strconv.Itoa(maxTitanTexts) + " texts a request through spillway (Titan embeds one a call)"
	}
	return ""
}

// embedUnsupported adds what the rung's own model cannot do.
func embedUnsupported(req *canonical.Request, model string) string {
	if reason := embedCheck(req); reason != "" {
		return reason
	}
	if isCohere(model) && req.Embed.Dimensions > 0 {
		return "Cohere on Bedrock has no choice of dimensions"
	}
	return ""
}

// embed sends the texts through InvokeModel.
func (a *Adapter) embed(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	if reason := embedUnsupported(req, t.Model); reason != "" {
		return nil, provider.Unencodable(reason, nil)
	}
	e := req.Embed
	if isCohere(t.Model) {
		b := []byte(`{"texts":[`)
		for i, s := range e.Texts {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.AppendString(b, s)
		}
		b = append(b, `],"input_type":"search_document"}`...)
		var out struct {
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := a.invoke(ctx, t, b, &out); err != nil {
			return nil, err
		}
		if len(out.Embeddings) > len(e.Texts) {
			return nil, failure.Malformed("Cohere embeddings answer", provider.ErrEmbeddingIndex)
		}
		return provider.Embedded(out.Embeddings, -1), nil
	}
	vectors := make([][]float32, 0, len(e.Texts))
	tokens := 0
	for _, s := range e.Texts {
		b := []byte(`{"inputText":`)
		b = jsonwrite.AppendString(b, s)
		if e.Dimensions > 0 {
			b = append(b, `,"dimensions":`...)
			b = strconv.AppendInt(b, int64(e.Dimensions), 10)
		}
		b = append(b, '}')
		var out struct {
			Embedding           []float32 `json:"embedding"`
			InputTextTokenCount int       `json:"inputTextTokenCount"`
		}
		if err := a.invoke(ctx, t, b, &out); err != nil {
			return nil, err
		}
		if out.InputTextTokenCount < 0 || out.InputTextTokenCount > provider.MaxEmbeddingTokens-tokens {
			return nil, failure.Malformed("Titan embeddings answer", provider.ErrEmbeddingUsage)
		}
		tokens += out.InputTextTokenCount
		vectors = append(vectors, out.Embedding)
	}
	return provider.Embedded(vectors, tokens), nil
}

// invoke calls InvokeModel with body and decodes the JSON answer into out.
func (a *Adapter) invoke(ctx context.Context, t *provider.Target, body []byte, out any) error {
	hreq, err := a.newRequest(ctx, t, body, opInvoke, "application/json")
	if err != nil {
		return err
	}
	resp, err := provider.Do(t, hreq)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorAnswer(resp)
	}
	rb, err := provider.ReadBody(resp)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(rb, out); err != nil {
		return failure.Malformed("InvokeModel answer", err)
	}
	return nil
}
