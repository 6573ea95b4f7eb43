package mock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/sse"
)

var kinds = []string{"openai", "anthropic"}

// newMock starts a mock behind an httptest server on 127.0.0.1; both are
// torn down when the test ends (Close first, so no stalled handler can hold
// the server open).
func newMock(t testing.TB, kind string, opts Options) (*Mock, *httptest.Server) {
	t.Helper()
	m, err := New(kind, opts)
	if err != nil {
		t.Fatalf("New(%s): %v", kind, err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		m.Close()
		srv.Close()
	})
	return m, srv
}

func genPath(kind string) string {
	if kind == "anthropic" {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// reqBody is a minimal valid generation body; extra is spliced in as more
// top-level fields (e.g. `"tools":[...]`).
func reqBody(kind string, stream bool, extra string) string {
	var b strings.Builder
	if kind == "anthropic" {
		b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"Weather in Paris?"}]`)
	} else {
		b.WriteString(`{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"}]`)
		if stream {
			b.WriteString(`,"stream_options":{"include_usage":true}`)
		}
	}
	if stream {
		b.WriteString(`,"stream":true`)
	}
	if extra != "" {
		b.WriteString("," + extra)
	}
	b.WriteString("}")
	return b.String()
}

func toolsField(kind string, names ...string) string {
	var parts []string
	for _, n := range names {
		if kind == "anthropic" {
			parts = append(parts, `{"name":"`+n+`","input_schema":{"type":"object"}}`)
		} else {
			parts = append(parts, `{"type":"function","function":{"name":"`+n+`","parameters":{"type":"object"}}}`)
		}
	}
	return `"tools":[` + strings.Join(parts, ",") + `]`
}

// send posts body to the kind's generation path with the headers a real
// client sends, plus the given ones.
func send(t testing.TB, ctx context.Context, srv *httptest.Server, kind, body string, hdr ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+genPath(kind), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if kind == "anthropic" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return srv.Client().Do(req)
}

type result struct {
	status  int
	header  http.Header
	body    []byte
	readErr error
}

// exchange sends a request and reads the whole answer; a broken body shows in
// readErr.
func exchange(t testing.TB, srv *httptest.Server, kind, body string, hdr ...string) result {
	t.Helper()
	resp, err := send(t, context.Background(), srv, kind, body, hdr...)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, b, rerr}
}

type sseEvent struct {
	name, data string
}

// events splits a stream body into events. err is the reader's error at the
// end: nil for a clean end of the body.
func events(b []byte) ([]sseEvent, error) {
	return readEvents(strings.NewReader(string(b)))
}

func readEvents(r io.Reader) ([]sseEvent, error) {
	rd := sse.NewReader(r)
	defer rd.Release()
	var out []sseEvent
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{string(ev.Name), string(ev.Data)})
	}
}

// streamStats is what a client can count in a stream.
type streamStats struct {
	deltas   []string // every content delta: text, refusal, tool arguments
	usageOut int      // the last usage's output tokens, -1 when none
	usageIn  int      // total prompt tokens (cached included)
	cached   int
	terminal bool // [DONE] or message_stop seen
	stop     string
	errEvent string // data of an in-stream error event
	badJSON  int    // events whose data did not parse
}

func countStream(t testing.TB, kind string, evs []sseEvent) streamStats {
	t.Helper()
	st := streamStats{usageOut: -1}
	for _, ev := range evs {
		if kind == "openai" {
			if ev.name != "" {
				t.Errorf("openai stream carries an event: line %q", ev.name)
			}
			if ev.data == "[DONE]" {
				st.terminal = true
				continue
			}
			var ch struct {
				Error   json.RawMessage `json:"error"`
				Choices []struct {
					Delta struct {
						Content   *string `json:"content"`
						Refusal   *string `json:"refusal"`
						ToolCalls []struct {
							Function struct {
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Usage *struct {
					Prompt     int `json:"prompt_tokens"`
					Completion int `json:"completion_tokens"`
					Details    struct {
						Cached int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			if json.Unmarshal([]byte(ev.data), &ch) != nil {
				st.badJSON++
				continue
			}
			if ch.Error != nil {
				st.errEvent = ev.data
				continue
			}
			for _, c := range ch.Choices {
				d := c.Delta
				if d.Content != nil && *d.Content != "" {
					st.deltas = append(st.deltas, *d.Content)
				}
				if d.Refusal != nil && *d.Refusal != "" {
					st.deltas = append(st.deltas, *d.Refusal)
				}
				for _, tc := range d.ToolCalls {
					if tc.Function.Arguments != "" {
						st.deltas = append(st.deltas, tc.Function.Arguments)
					}
				}
				if c.FinishReason != nil {
					st.stop = *c.FinishReason
				}
			}
			if ch.Usage != nil {
				st.usageOut, st.usageIn, st.cached = ch.Usage.Completion, ch.Usage.Prompt, ch.Usage.Details.Cached
			}
			continue
		}
		var e struct {
			Type  string `json:"type"`
			Delta struct {
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				Input  int `json:"input_tokens"`
				Output int `json:"output_tokens"`
				Read   int `json:"cache_read_input_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(ev.data), &e) != nil {
			st.badJSON++
			continue
		}
		if e.Type != ev.name {
			t.Errorf("anthropic event %q carries type %q", ev.name, e.Type)
		}
		switch e.Type {
		case "content_block_delta":
			if s := e.Delta.Text + e.Delta.PartialJSON; s != "" {
				st.deltas = append(st.deltas, s)
			}
		case "message_delta":
			st.usageOut, st.usageIn, st.cached = e.Usage.Output, e.Usage.Input+e.Usage.Read, e.Usage.Read
			st.stop = e.Delta.StopReason
		case "message_stop":
			st.terminal = true
		case "error":
			st.errEvent = ev.data
		}
	}
	return st
}

// waitGoroutines waits until the goroutine count is back to at most base,
// failing the test after a generous bound: a stalled handler that outlives
// its client shows up here.
func waitGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
