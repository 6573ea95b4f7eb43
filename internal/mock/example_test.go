package mock_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/spillway-gw/spillway/internal/mock"
)

// A mock Anthropic provider that is overloaded for its next two requests,
// then healthy again; one request asks for its own fault in a header.
func Example() {
	m, err := mock.New("anthropic", mock.Options{Name: "primary", Fault: "status=529;times=2"})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(m)
	defer srv.Close()
	defer m.Close()

	post := func(fault string) {
		body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("anthropic-version", "2023-06-01")
		if fault != "" {
			req.Header.Set("X-Mock-Fault", fault)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		s := string(b)
		switch {
		case strings.Contains(s, `"overloaded_error"`):
			fmt.Println(resp.StatusCode, "overloaded_error")
		case strings.Contains(s, `"rate_limit_error"`):
			fmt.Println(resp.StatusCode, "rate_limit_error, retry-after", resp.Header.Get("retry-after"))
		default:
			i := strings.Index(s, `"text":"`) + len(`"text":"`)
			fmt.Println(resp.StatusCode, s[i:i+len("mock primary")])
		}
	}
	post("")
	post("status=429;retry_after=2") // per request: overrides, does not use up times=
	post("")
	post("")
	fmt.Println("requests:", m.Count())
	// Output:
	// 529 overloaded_error
	// 429 rate_limit_error, retry-after 2
	// 529 overloaded_error
	// 200 mock primary
	// requests: 4
}
