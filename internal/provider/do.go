package provider

import (
	"net/http"

	"github.com/spillway-gw/spillway/internal/failure"
)

// Do sends a request an adapter built and finished itself (for example one
// signed with SigV4, which needs the whole request, or one whose path keeps
// escaped labels), with t's client. Like Post, a failure to get any response
// back is failure.Transport with NoResponse set, and any status is returned
// as a response for the adapter to judge.
func Do(t *Target, req *http.Request) (*http.Response, error) {
	client := t.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, failure.Transport(err, true)
	}
	return resp, nil
}
