package adversarial

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// client is the callers' HTTP client: every request bounded.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 5 * time.Second},
	// The gateway's answers are relayed as they are.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// reply is one answer from the gateway.
type reply struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
	// For a chat answer: the text, the finish reason and the usage, from a
	// whole answer or from the stream's chunks.
	text   string
	finish string
	usage  *usage
	done   bool   // a stream ended with data: [DONE]
	code   string // error.code of an error answer (or error event)
}

type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func (r *reply) trail() string { return r.header.Get("X-Spillway-Trail") }

func (r *reply) String() string {
	b := r.body
	if len(b) > 600 {
		b = append(b[:600:600], "..."...)
	}
	return fmt.Sprintf("%d in %v, trail %q, finish %q, text %q, body %s", r.status, r.took.Round(time.Millisecond), r.trail(), r.finish, clip(r.text, 80), b)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// do sends one request; hdr alternates names and values. Fatal on a
// transport error.
func (g *gateway) do(t *testing.T, method, path, auth, body string, hdr ...string) *reply {
	t.Helper()
	req, err := http.NewRequest(method, g.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	r := &reply{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.parseStream(t)
	} else {
		r.parseWhole()
	}
	return r
}

// chatBody is an OpenAI Chat request for model; maxTokens 0 sends none.
func chatBody(model string, stream bool, maxTokens int, content string) string {
	m := map[string]any{
		"model":    model,
		"stream":   stream,
		"messages": []map[string]string{{"role": "user", "content": content}},
	}
	if stream {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	if maxTokens > 0 {
		m["max_tokens"] = maxTokens
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// chat sends an OpenAI Chat request with the default virtual key.
func (g *gateway) chat(t *testing.T, model string, stream bool, maxTokens int) *reply {
	t.Helper()
	return g.do(t, http.MethodPost, "/v1/chat/completions", g.key, chatBody(model, stream, maxTokens, "hello"))
}

// adminGet reads an admin (or usage) endpoint with the admin key and
// decodes its JSON into v.
func (g *gateway) adminGet(t *testing.T, path string, v any) *reply {
	t.Helper()
	r := g.do(t, http.MethodGet, path, g.admin, "")
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %s", path, r)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, r.body)
	}
	return r
}

type chatChoice struct {
	Message struct {
		Content *string `json:"content"`
	} `json:"message"`
	Delta struct {
		Content *string `json:"content"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type chatAnswer struct {
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage"`
	Error   *struct {
		Code string `json:"code"`
		Type string `json:"type"`
	} `json:"error"`
}

func (r *reply) parseWhole() {
	var a chatAnswer
	if json.Unmarshal(r.body, &a) != nil {
		return
	}
	if a.Error != nil {
		r.code = a.Error.Code
	}
	r.usage = a.Usage
	if len(a.Choices) > 0 {
		c := a.Choices[0]
		if c.Message.Content != nil {
			r.text = *c.Message.Content
		}
		if c.FinishReason != nil {
			r.finish = *c.FinishReason
		}
	}
}

func (r *reply) parseStream(t *testing.T) {
	t.Helper()
	var text strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			r.done = true
			continue
		}
		var a chatAnswer
		if err := json.Unmarshal([]byte(data), &a); err != nil {
			t.Errorf("an unparsable stream chunk: %v: %s", err, clip(data, 300))
			continue
		}
		if a.Error != nil {
			r.code = a.Error.Code
		}
		if a.Usage != nil {
			r.usage = a.Usage
		}
		for _, c := range a.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				r.finish = *c.FinishReason
			}
		}
	}
	r.text = text.String()
}

// failedOver checks that primary was tried and failed and that the
// secondary mock answered.
func failedOver(t *testing.T, r *reply, primary string) {
	t.Helper()
	trail := r.trail()
	if r.status != http.StatusOK || !strings.HasPrefix(trail, primary+"=") || strings.HasPrefix(trail, primary+"=ok") ||
		!strings.HasSuffix(trail, "secondary=ok") || !strings.HasPrefix(r.text, "mock secondary") {
		t.Errorf("want %s failed and secondary=ok: %s", primary, r)
	}
}
