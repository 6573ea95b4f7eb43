package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/idempotency"
)

// sdkGateway is a stand-in for the gateway's generation handler: idempotency
// in front, a canned OpenAI Chat answer (or a 502) behind. runs counts
// generations, hits counts HTTP requests.
type sdkGateway struct {
	store      *idempotency.Store
	runs, hits atomic.Int32
}

var chunks = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo."},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
}

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

func (g *sdkGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.hits.Add(1)
	body, _ := io.ReadAll(r.Body)
	d := openaichat.New()
	writeErr := func(w http.ResponseWriter, pub *failure.Public) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(pub.Status)
		_, _ = w.Write(d.AppendError(nil, pub))
	}
	c, err := g.store.Begin(r.Context(), "vk-1", r.Header.Get("Idempotency-Key"), idempotency.RequestHash(r.URL.Path, body))
	switch {
	case err != nil:
		return
	case c.Replay != nil:
		_ = idempotency.Replay(w, c.Replay)
		return
	case c.Failed != nil:
		_ = idempotency.Replay(w, c.Failed)
		return
	case c.Refused != "":
		w.Header().Set(idempotency.HeaderShouldRetry, "false")
		writeErr(w, c.Refused.Public())
		return
	}
	o := c.Owner
	defer o.Abandon()
	g.runs.Add(1)
	rw := o.Recorder(w)
	rw.Header().Set("X-Request-Id", "req-"+strconv.Itoa(int(g.runs.Load())))
	rw.Header().Set("X-Spillway-Deployment", "primary")
	switch {
	case bytes.Contains(body, []byte("please fail")):
		// Every rung failed. The SDK would retry a 502 at once.
		rw.Header().Set("Retry-After-Ms", "1")
		writeErr(rw, &failure.Public{Status: http.StatusBadGateway, Code: "upstream_error", Message: "the model provider failed to answer"})
		o.Fail(rw.Recording())
		return
	case bytes.Contains(body, []byte(`"stream":true`)):
		rw.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		rw.WriteHeader(http.StatusOK)
		for _, c := range chunks {
			_, _ = io.WriteString(rw, "data: "+c+"\n\n")
			rw.Flush()
		}
		_, _ = io.WriteString(rw, "data: [DONE]\n\n")
		rw.Flush()
	default:
		rw.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(rw, completion)
	}
	o.Complete(rw.Recording())
}

func newSDKGateway(t *testing.T) (*sdkGateway, func(key string, opts ...option.RequestOption) *openai.Client) {
	g := &sdkGateway{store: idempotency.New(idempotency.Options{})}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, func(key string, opts ...option.RequestOption) *openai.Client {
		// Default SDK retries stay on: the test proves they cannot run a
		// generation twice.
		c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL + "/v1/"), option.WithAPIKey("sk-test"),
			option.WithHeader("Idempotency-Key", key)}, opts...)...)
		return &c
	}
}

func params(text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// A different body under a used key is a 409 the SDK reports as a typed
// error, and X-Should-Retry stops its default retry of 409s.
func TestSDKConflictIsTypedAndNotRetried(t *testing.T) {
	g, client := newSDKGateway(t)
	if _, err := client("k").Chat.Completions.New(ctx(t), params("hi")); err != nil {
		t.Fatal(err)
	}
	_, err := client("k").Chat.Completions.New(ctx(t), params("something else"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusConflict || oe.Code != "idempotency_key_reused" {
		t.Fatalf("err %v", err)
	}
	if g.hits.Load() != 2 || g.runs.Load() != 1 {
		t.Fatalf("hits %d runs %d: the SDK retried a final 409", g.hits.Load(), g.runs.Load())
	}
}

// A failed owner fails closed: the SDK's automatic retry under the same key
// gets the recorded failure, and the generation never runs twice.
func TestSDKRetryOfAFailureGetsTheFailure(t *testing.T) {
	g, client := newSDKGateway(t)
	var resp *http.Response
	_, err := client("k").Chat.Completions.New(ctx(t), params("please fail"), option.WithResponseInto(&resp))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadGateway || oe.Code != "upstream_error" {
		t.Fatalf("err %v", err)
	}
	if g.hits.Load() != 2 || g.runs.Load() != 1 {
		t.Fatalf("hits %d runs %d, want the SDK's one retry answered from the store", g.hits.Load(), g.runs.Load())
	}
	if resp.Header.Get(idempotency.HeaderReplayed) != "true" || resp.Header.Get("X-Request-Id") != "req-1" {
		t.Fatalf("last answer not the replayed failure: %v", resp.Header)
	}
}

// The SDK decodes a replay exactly as it decoded the original, streamed or
// not.
func TestSDKReplay(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		g, client := newSDKGateway(t)
		read := func() (string, string, int, *http.Response) {
			var resp *http.Response
			s := client("k-stream", option.WithResponseInto(&resp)).Chat.Completions.NewStreaming(ctx(t), params("hi"))
			acc := openai.ChatCompletionAccumulator{}
			n := 0
			for s.Next() {
				acc.AddChunk(s.Current())
				n++
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return acc.Choices[0].Message.Content, acc.Choices[0].FinishReason, n, resp
		}
		text1, fin1, n1, r1 := read()
		text2, fin2, n2, r2 := read()
		if text1 != "Hello." || text1 != text2 || fin1 != "stop" || fin1 != fin2 || n1 != len(chunks) || n1 != n2 {
			t.Fatalf("original %q/%s/%d, replay %q/%s/%d", text1, fin1, n1, text2, fin2, n2)
		}
		if r1.Header.Get(idempotency.HeaderReplayed) != "" || r2.Header.Get(idempotency.HeaderReplayed) != "true" ||
			r2.Header.Get("X-Request-Id") != "req-1" || r2.Header.Get("X-Spillway-Deployment") != "primary" {
			t.Fatalf("headers: %v then %v", r1.Header, r2.Header)
		}
		if g.runs.Load() != 1 {
			t.Fatalf("runs %d", g.runs.Load())
		}
	})
	t.Run("non-stream", func(t *testing.T) {
		g, client := newSDKGateway(t)
		a, err := client("k").Chat.Completions.New(ctx(t), params("hi"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := client("k").Chat.Completions.New(ctx(t), params("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if a.RawJSON() != completion || b.RawJSON() != completion || b.Choices[0].Message.Content != "Hello." {
			t.Fatalf("original %s, replay %s", a.RawJSON(), b.RawJSON())
		}
		if g.runs.Load() != 1 {
			t.Fatalf("runs %d", g.runs.Load())
		}
	})
}
