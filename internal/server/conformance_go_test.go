package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The Go half of the client conformance suite: the newest openai-go v3 and
// anthropic-sdk-go v2, unchanged, through the patterns users write.

func (h *confHarness) anthropic(opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(h.gw.URL + "/"),
		aoption.WithAPIKey(h.key), aoption.WithMaxRetries(0)}, opts...)...)
}

func (h *confHarness) openai(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(h.gw.URL + "/v1/"),
		option.WithAPIKey(h.key), option.WithMaxRetries(0)}, opts...)...)
}

// count_tokens: the Anthropic rung's own count where it has one, else the
// gateway's estimate, and the header says which.
func TestConformanceCountTokens(t *testing.T) {
	h := newConformanceHarness(t)
	ctx := context.Background()
	ac := h.anthropic()
	params := func(model string) anthropic.MessageCountTokensParams {
		return anthropic.MessageCountTokensParams{Model: anthropic.Model(model),
			System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("Be brief.")},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How many tokens is this?"))}}
	}
	for _, tc := range []struct{ model, kind, deployment string }{
		{confAnthropic, "exact", "anthropic"},
		{confOpenAI, "estimate", ""},
		{confGemini, "estimate", ""},
	} {
		var resp *http.Response
		n, err := ac.Messages.CountTokens(ctx, params(tc.model), aoption.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if n.InputTokens <= 0 || resp.Header.Get("X-Spillway-Token-Count") != tc.kind || resp.Header.Get("X-Spillway-Deployment") != tc.deployment {
			t.Errorf("%s: %d tokens, %s from %q; want %s from %q", tc.model, n.InputTokens,
				resp.Header.Get("X-Spillway-Token-Count"), resp.Header.Get("X-Spillway-Deployment"), tc.kind, tc.deployment)
		}
	}
	_, err := ac.Messages.CountTokens(ctx, params("no-such-model"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("unknown model: %v", err)
	}
	bad := h.anthropic(aoption.WithAPIKey("sk-spw-nope"))
	if _, err := bad.Messages.CountTokens(ctx, params(confAnthropic)); !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Errorf("bad key: %v", err)
	}
	// count_tokens refuses what only shapes an answer, as Anthropic does.
	resp, err := h.post("/v1/messages/count_tokens", `{"model":"`+confAnthropic+`","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2026-10-21")
	if err != nil || resp.StatusCode != 400 {
		t.Errorf("max_tokens on count_tokens: %v %v", resp.StatusCode, err)
	}
	// OpenAI's input_tokens counter: an estimate (no OpenAI-format rung
	// counts), in the Responses shape.
	oc := h.openai()
	var oresp *http.Response
	cnt, err := oc.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{Model: openai.String(confOpenAI),
		Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("How many tokens is this?")}}, option.WithResponseInto(&oresp))
	if err != nil || cnt.InputTokens <= 0 || oresp.Header.Get("X-Spillway-Token-Count") != "estimate" {
		t.Fatalf("input_tokens: %+v %v", cnt, err)
	}
	if !strings.Contains(oresp.Header.Get("Content-Type"), "json") {
		t.Errorf("content-type %q", oresp.Header.Get("Content-Type"))
	}
}
