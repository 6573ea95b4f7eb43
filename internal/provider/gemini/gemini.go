// Package gemini is the upstream adapter for the Google Gemini API
// (streamGenerateContent with alt=sse, and the embeddings methods).
//
// Gemini differs from the other providers in ways that shape this adapter:
// the model and the streaming mode are in the URL, not the body; function
// calls arrive whole (no argument fragments) and usually without ids; there
// is no tool-use finish reason (a call ends with STOP); the stream has no
// terminal event, so the only sign that a streamed answer is complete is a
// finishReason (or a prompt block) before the body ends; and errors inside a
// stream come as a block that is not "data:" but a bare Google RPC error
// object, as go-genai reads them.
package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Adapter speaks the Gemini API. It is stateless: everything about the
// deployment comes in the Target.
type Adapter struct{}

var (
	_ provider.Adapter = (*Adapter)(nil)
	_ provider.Checker = (*Adapter)(nil)
)

// New returns the adapter.
func New() provider.Adapter { return &Adapter{} }

// apiVersion is the Gemini API version go-genai uses by default; function
// declarations with parametersJsonSchema and responseJsonSchema need it.
const apiVersion = "v1beta"

// Check reports why req cannot be sent faithfully to Gemini, so the rung is
// skipped instead of a feature being dropped.
func (*Adapter) Check(req *canonical.Request) error {
	if req.Embed != nil && len(req.Embed.Tokens) > 0 {
		return errors.New(errTokenIDs)
	}
	if reason := unsupported(req); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// Stream sends req through streamGenerateContent?alt=sse and returns once a
// 2xx arrived.
func (*Adapter) Stream(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	if req.Embed != nil {
		if len(req.Embed.Tokens) > 0 {
			return nil, provider.Unencodable(errTokenIDs, nil)
		}
		return embed(ctx, t, req)
	}
	resp, err := send(ctx, t, req)
	if err != nil {
		return nil, err
	}
	// A JSON body where events were asked for is an error answer (or a
	// proxy that dropped alt=sse): either way not a stream to read.
	if provider.IsJSON(resp.Header) {
		return nil, jsonInsteadOfStream(resp)
	}
	return newStream(resp.Body), nil
}

// errTokenIDs refuses token-id input: ids of another tokenizer mean
// nothing to Gemini.
const errTokenIDs = "Gemini embeds text only, not token ids"

// endpoint is streamGenerateContent's URL. A model id that already names a
// resource ("tunedModels/x", "models/x") is used as is; a bare id goes
// under models/.
func endpoint(t *provider.Target) string {
	model := t.Model
	if !strings.Contains(model, "/") {
		model = "models/" + model
	}
	var b strings.Builder
	b.Grow(len(t.BaseURL) + len(model) + 48)
	b.WriteString(t.BaseURL)
	b.WriteString("/" + apiVersion + "/")
	b.WriteString(model)
	b.WriteString(":streamGenerateContent?alt=sse")
	return b.String()
}

func send(ctx context.Context, t *provider.Target, req *canonical.Request) (*http.Response, error) {
	// The engine should have called Check; refusing here keeps a skipped
	// check from turning into a silently degraded request.
	if reason := unsupported(req); reason != "" {
		return nil, provider.Unencodable(reason, nil)
	}
	body, err := encode(req, t)
	if err != nil {
		return nil, provider.Unencodable("the request could not be encoded for this provider", err)
	}
	resp, err := provider.Post(ctx, t, endpoint(t), body, func(h http.Header) {
		if t.APIKey != "" {
			h.Set("X-Goog-Api-Key", t.APIKey)
		}
		h.Set("Accept", "text/event-stream")
	})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, provider.ErrorAnswer(resp, parseErrorBody)
	}
	return resp, nil
}

func jsonInsteadOfStream(resp *http.Response) error {
	return provider.JSONInsteadOfStream(resp, func(body []byte) error {
		if e, ok := parseRPC(body); ok {
			return e.answer()
		}
		return nil
	})
}
