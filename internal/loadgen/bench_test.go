package loadgen

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// memTransport answers every request with the same body from memory, so
// a benchmark sees the driver's own cost and none of a network's.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(m.body)), Header: http.Header{}, Request: r}, nil
}

// BenchmarkDriverStream is the driver's cost per 22-event stream (send,
// read to the end, find the terminator, record): what the load generator
// takes from the cores it shares with what it measures.
func BenchmarkDriverStream(b *testing.B) {
	body := []byte(strings.Repeat(`data: {"choices":[{"index":0,"delta":{"content":" lorem"}}]}`+"\n\n", 21) + "data: [DONE]\n\n")
	client := &http.Client{Transport: memTransport{body: body}}
	t := Target{Name: "mem", URL: "http://127.0.0.1/v1/chat/completions", Body: []byte(`{"stream":true}`), Stream: true, Terminator: []byte("data: [DONE]")}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := Run(context.Background(), Options{Target: t, Client: client, Concurrency: 1, Requests: b.N})
	if err != nil || res.OK != int64(b.N) {
		b.Fatalf("%v, %+v", err, res)
	}
}
