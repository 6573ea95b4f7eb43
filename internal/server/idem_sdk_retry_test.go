package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/server"
)

// flakyShared is a shared idempotency store that cannot answer its first
// down claims (Redis away), then owns every key it is asked about.
type flakyShared struct {
	down   int64
	claims atomic.Int64
}

func (f *flakyShared) Claim(context.Context, string, string, [32]byte) (idempotency.SharedClaim, error) {
	if f.claims.Add(1) <= f.down {
		return idempotency.SharedClaim{}, errors.New("shared store unreachable")
	}
	return idempotency.SharedClaim{State: idempotency.SharedOwned}, nil
}
func (*flakyShared) Wait(ctx context.Context, _, _ string) error { return ctx.Err() }
func (*flakyShared) Finish(string, string, [32]byte, idempotency.SharedState, *idempotency.Recording, time.Duration) {
}

// The official SDKs, as users call them with an Idempotency-Key, against a
// gateway whose shared store cannot check the key at first: the refusal
// (503 idempotency_unavailable, Retry-After 1, no x-should-retry: false)
// is retried by the SDK on its own and the caller gets one answer from one
// provider call. While the store stays away past the SDK's retries, the
// caller gets the typed error and the provider saw nothing.
func TestSDKRetriesIdempotencyUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("each case waits out one Retry-After of 1 s")
	}
	type sdk struct {
		name string
		call func(ctx context.Context, h *harness, key string) (text string, status int, code string, err error)
	}
	sdks := []sdk{
		{"openai-go chat", func(ctx context.Context, h *harness, key string) (string, int, string, error) {
			c := h.client(option.WithMaxRetries(1), option.WithHeader("Idempotency-Key", key))
			r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    publicModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			var apiErr *openai.Error
			if errors.As(err, &apiErr) {
				return "", apiErr.StatusCode, apiErr.Code, err
			}
			if err != nil {
				return "", 0, "", err
			}
			return r.Choices[0].Message.Content, http.StatusOK, "", nil
		}},
		{"anthropic-sdk-go messages", func(ctx context.Context, h *harness, key string) (string, int, string, error) {
			c := anthropic.NewClient(aoption.WithBaseURL(h.gw.URL+"/"), aoption.WithAPIKey(h.key),
				aoption.WithMaxRetries(1), aoption.WithHeader("Idempotency-Key", key))
			m, err := c.Messages.New(ctx, anthropic.MessageNewParams{
				Model:     publicModel,
				MaxTokens: 64,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
			})
			var apiErr *anthropic.Error
			if errors.As(err, &apiErr) {
				return "", apiErr.StatusCode, string(apiErr.Type()), err
			}
			if err != nil {
				return "", 0, "", err
			}
			return m.Content[0].Text, http.StatusOK, "", nil
		}},
	}
	for _, s := range sdks {
		for _, tc := range []struct {
			name string
			down int64 // claims the shared store cannot answer
		}{
			{"store back before the retry", 1},
			{"store away past the retries", 1 << 30},
		} {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				shared := &flakyShared{down: tc.down}
				store := idempotency.New(idempotency.Options{})
				store.SetShared(shared)
				store.SetDownPolicy(idempotency.DownRefuse)
				h := newHarnessOpts(t, nil, func(o *server.Options) { o.Idempotency = store }, rungSpec{"primary", "openai"})
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				text, status, code, err := s.call(ctx, h, "order-42")
				calls := h.counts()["primary"]
				if tc.down == 1 {
					if err != nil || text == "" || calls != 1 || shared.claims.Load() != 2 {
						t.Fatalf("got %q, err %v; %d provider calls, %d claims; want one answer, 1 call, 2 claims", text, err, calls, shared.claims.Load())
					}
					return
				}
				if status != http.StatusServiceUnavailable || calls != 0 || shared.claims.Load() != 2 {
					t.Fatalf("status %d (%s), err %v; %d provider calls, %d claims; want 503 after one SDK retry, 0 calls", status, code, err, calls, shared.claims.Load())
				}
				if s.name == "openai-go chat" && code != "idempotency_unavailable" {
					t.Errorf("error code %q, want idempotency_unavailable", code)
				}
			})
		}
	}
}
