// Package openai is the upstream adapter for OpenAI Chat Completions and the
// servers compatible with it (OpenRouter, vLLM and the like).
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/spillway-gw/spillway/internal/anthropicbeta"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Adapter speaks Chat Completions. It is stateless: everything about the
// deployment comes in the Target.
type Adapter struct{}

var (
	_ provider.Adapter = (*Adapter)(nil)
	_ provider.Checker = (*Adapter)(nil)
)

// Check reports why req cannot be sent faithfully to a Chat Completions
// server, so the rung is skipped instead of a feature being dropped.
func (*Adapter) Check(req *canonical.Request) error {
	if f := anthropicbeta.FirstClaude(req.Betas); f != "" {
		return errors.New(provider.BetaUnsupported(f))
	}
	if req.TopK != nil {
		return errors.New("Chat Completions has no top_k sampling")
	}
	if reason := provider.ForeignThinking(req, ""); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// New returns the adapter.
func New() provider.Adapter { return &Adapter{} }

const chatPath = "/v1/chat/completions"

// Stream sends req as a streaming request and returns once a 2xx arrived.
func (*Adapter) Stream(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	if req.Embed != nil {
		return embed(ctx, t, req)
	}
	resp, err := send(ctx, t, req)
	if err != nil {
		return nil, err
	}
	// A server that answers a stream request with a JSON body is reporting
	// an error (compatible servers do this with status 200).
	if provider.IsJSON(resp.Header) {
		return nil, jsonInsteadOfStream(resp)
	}
	return newStream(resp.Body), nil
}

func send(ctx context.Context, t *provider.Target, req *canonical.Request) (*http.Response, error) {
	body, err := encode(req, t.Model)
	if err != nil {
		return nil, provider.Unencodable("the request could not be encoded for this provider", err)
	}
	resp, err := provider.Post(ctx, t, t.BaseURL+chatPath, body, func(h http.Header) {
		if t.APIKey != "" {
			h.Set("Authorization", "Bearer "+t.APIKey)
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
		var eb errorBody
		if err := json.Unmarshal(body, &eb); err != nil || isNull(eb.Error) {
			return nil
		}
		return streamError(eb.Error)
	})
}
