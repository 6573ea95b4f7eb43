package gemini_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/provider/gemini"
)

// Example streams one answer from a Gemini server and prints the canonical
// events it becomes.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash","responseId":"r1"}

data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo!"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash","responseId":"r1"}

`)
	}))
	defer srv.Close()

	target := &provider.Target{BaseURL: srv.URL, Model: "gemini-2.5-flash", APIKey: "AIza-example", HTTP: srv.Client()}
	req := &canonical.Request{Messages: []canonical.Message{
		{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("Say hello")}},
	}}
	st, err := gemini.New().Stream(context.Background(), target, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err == io.EOF {
			fmt.Println("complete")
			return
		}
		if err != nil {
			fmt.Println("broken:", err)
			return
		}
		switch ev.Kind {
		case canonical.EventTextDelta:
			fmt.Printf("text %q\n", ev.Text)
		case canonical.EventUsage:
			fmt.Printf("usage in=%d out=%d\n", ev.Usage.InputTokens, ev.Usage.OutputTokens)
		case canonical.EventStop:
			fmt.Println("stop", ev.Stop)
		}
	}
	// Output:
	// text "Hel"
	// usage in=5 out=0
	// text "lo!"
	// usage in=5 out=2
	// stop end
	// complete
}
