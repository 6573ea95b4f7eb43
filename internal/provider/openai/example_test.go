package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/provider/openai"
)

// Example streams one answer from a Chat Completions server and prints the
// canonical events it becomes.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-1","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}

data: [DONE]

`)
	}))
	defer srv.Close()

	target := &provider.Target{BaseURL: srv.URL, Model: "gpt-4o", APIKey: "sk-example", HTTP: srv.Client()}
	req := &canonical.Request{Messages: []canonical.Message{
		{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("Say hello")}},
	}}
	st, err := openai.New().Stream(context.Background(), target, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Kind {
		case canonical.EventTextDelta:
			fmt.Println(ev.Kind, ev.Text)
		case canonical.EventStop:
			fmt.Println(ev.Kind, ev.Stop)
		case canonical.EventUsage:
			fmt.Println(ev.Kind, ev.Usage.InputTokens, ev.Usage.OutputTokens)
		default:
			fmt.Println(ev.Kind, ev.ID, ev.Name)
		}
	}
	// Output:
	// start chatcmpl-1 gpt-4o
	// text_delta Hello
	// stop end
	// usage 9 1
}
