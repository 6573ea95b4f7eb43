package bedrock_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/mock"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/provider/bedrock"
)

// Example streams one answer from the Bedrock mock, signing with SigV4 for
// an inference profile, and prints the canonical events it becomes.
func Example() {
	m, _ := mock.New("bedrock", mock.Options{Name: "example", Fault: "tokens=3"})
	srv := httptest.NewServer(m)
	defer srv.Close()
	defer m.Close()

	target := &provider.Target{
		BaseURL: srv.URL,
		Model:   "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		AWS:     &provider.AWSKeys{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "example"},
		Region:  "us-east-1",
		HTTP:    srv.Client(),
	}
	req := &canonical.Request{Messages: []canonical.Message{
		{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("Say hello")}},
	}}
	st, err := bedrock.New().Stream(context.Background(), target, req)
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
			fmt.Printf("%s %q\n", ev.Kind, ev.Text)
		case canonical.EventStop:
			fmt.Println(ev.Kind, ev.Stop)
		case canonical.EventUsage:
			fmt.Println(ev.Kind, "output", ev.Usage.OutputTokens)
		default:
			fmt.Println(ev.Kind)
		}
	}
	fmt.Println(m.Requests()[0].Path)
	// Output:
	// start
	// text_delta "mock"
	// text_delta " exa"
	// text_delta "mple"
	// stop end
	// usage output 3
	// /model/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream
}
