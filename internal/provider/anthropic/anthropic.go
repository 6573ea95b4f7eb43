// Package anthropic is the upstream adapter for the Anthropic Messages API.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Adapter speaks Messages. It is stateless: everything about the deployment
// comes in the Target.
type Adapter struct{}

var (
	_ provider.Adapter      = (*Adapter)(nil)
	_ provider.Checker      = (*Adapter)(nil)
	_ provider.TokenCounter = (*Adapter)(nil)
)

// New returns the adapter.
func New() provider.Adapter { return &Adapter{} }

const (
	messagesPath = "/v1/messages"
	countPath    = "/v1/messages/count_tokens"
	// version20230601 is the version every Anthropic-compatible server
	// speaks, and the only one that takes temperature, top_p and top_k.
	version20230601 = "2023-06-01"
	// defaultMaxTokens fills the required max_tokens when neither the
	// request nor the deployment sets a ceiling.
	defaultMaxTokens = 4096
)

// Check reports why req cannot be sent faithfully to Anthropic, so the rung
// is skipped instead of a feature being dropped.
func (*Adapter) Check(req *canonical.Request) error {
	if reason := unsupported(req); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// Stream sends req as a streaming request and returns once a 2xx arrived.
func (*Adapter) Stream(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	resp, err := send(ctx, t, req)
	if err != nil {
		return nil, err
	}
	// A JSON body where events were asked for is an error answer.
	if provider.IsJSON(resp.Header) {
		return nil, jsonInsteadOfStream(resp)
	}
	return newStream(resp.Body), nil
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
	resp, err := provider.Post(ctx, t, t.BaseURL+messagesPath, body, func(h http.Header) {
		if t.APIKey != "" {
			h.Set("X-Api-Key", t.APIKey)
		}
		h.Set("Anthropic-Version", version(req))
		if len(req.Betas) > 0 {
			h.Set("Anthropic-Beta", strings.Join(req.Betas, ","))
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

// CountTokens asks Anthropic's count_tokens endpoint how many input tokens
// req holds, as this adapter would send it.
func (*Adapter) CountTokens(ctx context.Context, t *provider.Target, req *canonical.Request) (int, error) {
	if reason := unsupported(req); reason != "" {
		return 0, provider.Unencodable(reason, nil)
	}
	body, err := encodeBody(req, t, true)
	if err != nil {
		return 0, provider.Unencodable("the request could not be encoded for this provider", err)
	}
	resp, err := provider.Post(ctx, t, t.BaseURL+countPath, body, func(h http.Header) {
		if t.APIKey != "" {
			h.Set("X-Api-Key", t.APIKey)
		}
		h.Set("Anthropic-Version", version(req))
		if len(req.Betas) > 0 {
			h.Set("Anthropic-Beta", strings.Join(req.Betas, ","))
		}
		h.Set("Accept", "application/json")
	})
	if err != nil {
		return 0, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, provider.ErrorAnswer(resp, parseErrorBody)
	}
	rb, err := provider.ReadBody(resp)
	if err != nil {
		return 0, err
	}
	var out struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(rb, &out); err != nil || out.InputTokens == nil || *out.InputTokens < 0 || *out.InputTokens > maxCountedTokens {
		return 0, &failure.Error{Class: failure.ProviderUnavailable, Detail: "count_tokens answered without a valid input_tokens"}
	}
	return int(*out.InputTokens), nil
}

// maxCountedTokens bounds a provider's count: no context window holds more.
const maxCountedTokens = 100_000_000

// version is the anthropic-version sent upstream: 2023-06-01 when the
// request samples (the one version that takes temperature, top_p and
// top_k), else the version an Anthropic caller spoke, else 2023-06-01.
// Requests and answers have one shape under both versions.
func version(req *canonical.Request) string {
	if req.Temperature != nil || req.TopP != nil || req.TopK != nil || req.AnthropicVersion == "" {
		return version20230601
	}
	return req.AnthropicVersion
}

func jsonInsteadOfStream(resp *http.Response) error {
	return provider.JSONInsteadOfStream(resp, func(body []byte) error {
		var a failure.Answer
		if !parseError(body, &a) {
			return nil
		}
		a.Status = statusOf(a.Type)
		return failure.Classify(a)
	})
}
