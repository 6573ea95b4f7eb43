package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Every path an SDK may call answers JSON in the dialect its prefix
// implies, never net/http's plain text: SDKs build their exceptions from
// that body.
func TestPathsAnswerJSONInTheirDialect(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	tests := []struct {
		method, path string
		status       int
		code         string
		anthropic    bool
		allow        string
	}{
		{"GET", "/v1/responses/resp_123", 404, "unsupported_endpoint", false, ""},
		{"DELETE", "/v1/responses/resp_123", 404, "unsupported_endpoint", false, ""},
		{"POST", "/v1/responses/resp_123/cancel", 404, "unsupported_endpoint", false, ""},
		{"GET", "/v1/responses/resp_123/input_items", 404, "unsupported_endpoint", false, ""},
		{"POST", "/v1/conversations", 404, "unsupported_endpoint", false, ""},
		{"GET", "/v1/chat/completions/chatcmpl-1", 404, "unsupported_endpoint", false, ""},
		{"GET", "/v1/chat/completions", 404, "unsupported_endpoint", false, ""},
		{"POST", "/v1/completions", 404, "unsupported_endpoint", false, ""},
		{"POST", "/v1/files", 404, "unsupported_endpoint", false, ""},
		{"POST", "/v1/messages/batches", 404, "unsupported_endpoint", true, ""},
		{"GET", "/v1/messages/batches/msgbatch_1", 404, "unsupported_endpoint", true, ""},
		{"POST", "/v1/nosuch", 404, "not_found", false, ""},
		{"GET", "/", 404, "not_found", false, ""},
		{"POST", "/v1/messages/nosuch", 404, "not_found", true, ""},
		{"GET", "/v1/messages", 405, "method_not_allowed", true, "POST"},
		{"PUT", "/v1/responses", 405, "method_not_allowed", false, "POST"},
		{"POST", "/v1/models", 405, "method_not_allowed", false, "GET"},
		{"DELETE", "/healthz", 405, "method_not_allowed", false, "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, h.gw.URL+tt.path, strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+h.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d content-type %q body %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type, Code, Message string
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != tt.code || e.Error.Message == "" {
				t.Fatalf("body %s: want code %s and a message", body, tt.code)
			}
			if tt.anthropic != (e.Type == "error") {
				t.Errorf("body %s: anthropic shape = %v, want %v", body, e.Type == "error", tt.anthropic)
			}
		})
	}
	t.Run("the OpenAI SDK reads the stateless answer as a NotFoundError with its code", func(t *testing.T) {
		c := h.client()
		_, err := c.Responses.Get(context.Background(), "resp_123", openaiResponseGetParams())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "unsupported_endpoint" || !strings.Contains(apiErr.Message, "stateless") {
			t.Fatalf("err = %v", err)
		}
	})
}

// /v1/models lists only what the key may call, and retrieve finds one.
func TestModelsListAndRetrieve(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Pools = append(c.Pools, catalog.Pool{ID: "other", Model: "other-model", Deployments: []string{"primary"}})
		c.Routes = append(c.Routes, catalog.Route{Model: "other-model", Pool: "other"})
	}, rungSpec{"primary", "openai"})
	ctx := context.Background()
	ids := func(c openai.Client) []string {
		page, err := c.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range page.Data {
			out = append(out, m.ID)
		}
		return out
	}
	if got := strings.Join(ids(h.client()), ","); got != publicModel+",other-model" {
		t.Errorf("unrestricted key lists %q", got)
	}
	admin := h.client()
	m, err := admin.Models.Get(ctx, "other-model")
	if err != nil || m.ID != "other-model" || m.Object != "model" {
		t.Fatalf("retrieve: %+v %v", m, err)
	}
	restricted := h.restrictedKey(t, publicModel)
	c := h.client(optionAPIKey(restricted))
	if got := strings.Join(ids(c), ","); got != publicModel {
		t.Errorf("a key restricted to %s lists %q", publicModel, got)
	}
	_, err = c.Models.Get(ctx, "other-model")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("a restricted key retrieving another model: %v", err)
	}
	bad := h.client(optionAPIKey("sk-spw-nosuch"))
	_, err = bad.Models.List(ctx)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("a bad key listing models: %v", err)
	}
}

func openaiResponseGetParams() responses.ResponseGetParams { return responses.ResponseGetParams{} }
