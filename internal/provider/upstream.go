package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
)

// Bounds on how much of a provider's answer is read into memory.
const (
	// MaxErrorBody bounds an error answer's body: enough for any real error
	// JSON, small enough that a misbehaving upstream cannot balloon memory.
	MaxErrorBody = 64 << 10
	// MaxResponseBody bounds a success body read whole (an embeddings or
	// count_tokens answer).
	MaxResponseBody = 64 << 20
)

// Post sends body as a JSON POST to url with t's client. setHeaders adds the
// provider's own headers (auth, version); Post adds Content-Type and, when
// t has one, Idempotency-Key. A failure to get any response back is returned
// as failure.Transport with NoResponse set; any status is returned as a
// response for the adapter to judge.
func Post(ctx context.Context, t *Target, url string, body []byte, setHeaders func(http.Header)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		// Only a malformed BaseURL gets here: the deployment is misbound.
		return nil, &failure.Error{Class: failure.ProviderBindingInvalid, NoResponse: true,
			Detail: "cannot build the upstream request", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if t.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", t.IdempotencyKey)
	}
	if setHeaders != nil {
		setHeaders(req.Header)
	}
	return Do(t, req)
}

// ErrorAnswer turns a non-2xx response into a classified error. It reads at
// most MaxErrorBody bytes of the body, closes it, and lets parse fill in the
// provider's type, code, message and param from the body; parse may leave a
// body it does not recognise alone, and the answer then classifies by status.
func ErrorAnswer(resp *http.Response, parse func(body []byte, a *failure.Answer)) *failure.Error {
	defer resp.Body.Close()
	a := failure.Answer{Status: resp.StatusCode, RetryAfter: RetryAfter(resp.Header, time.Now())}
	// A body cut short still leaves the status to classify by.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	if parse != nil && len(body) > 0 {
		parse(body, &a)
	}
	return failure.Classify(a)
}

// JSONInsteadOfStream turns a JSON body that answered a stream request (an
// error, however its status reads) into the failure it reports: it reads at
// most MaxErrorBody bytes, closes the body, and lets parse classify them;
// parse returns nil for a body it does not recognise, which is then a
// malformed answer.
func JSONInsteadOfStream(resp *http.Response, parse func(body []byte) error) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	if err != nil {
		return failure.Transport(err, false)
	}
	if err := parse(body); err != nil {
		return err
	}
	return failure.Malformed("JSON body where an event stream was expected", nil)
}

// ReadBody reads a success body whole, bounded by MaxResponseBody, and
// closes it. A read failure after the headers arrived is a transport
// failure with response bytes already received.
func ReadBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	body, err := ReadAllSized(io.LimitReader(resp.Body, MaxResponseBody+1), resp.ContentLength, MaxResponseBody)
	if err != nil {
		return nil, failure.Transport(fmt.Errorf("read response body: %w", err), false)
	}
	if len(body) > MaxResponseBody {
		return nil, failure.Malformed("response body larger than 64 MiB", nil)
	}
	return body, nil
}

// ReadAllSized reads r to its end like io.ReadAll, into one buffer sized
// by size (a Content-Length; -1 when unknown) when 0 <= size <= max, so a
// body of known length costs one allocation instead of a growing series.
// size is a hint only: a shorter or longer body reads correctly. The first
// allocation is capped at sizedReadMax, so a peer that announces a large
// body and sends nothing pins no more than that.
func ReadAllSized(r io.Reader, size, max int64) ([]byte, error) {
	if size < 0 || size > max {
		return io.ReadAll(r)
	}
	// One spare byte: the read that meets EOF must not grow the buffer.
	b := make([]byte, 0, min(size, sizedReadMax)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // a longer body than announced: grow
		}
	}
}

// sizedReadMax bounds what ReadAllSized allocates before bytes arrive:
// larger bodies grow as they come, like io.ReadAll.
const sizedReadMax = 256 << 10

// IsJSON reports whether h's Content-Type is application/json (any case,
// any parameters), without mime.ParseMediaType's allocations: adapters ask
// it of every streamed answer.
func IsJSON(h http.Header) bool {
	ct, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}

// RetryAfter is the delay a provider asked for: retry-after-ms (milliseconds)
// first, then Retry-After as delay-seconds or an HTTP-date relative to now.
// It is 0 when neither header is usable or the date has passed.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(maxRetryAfter/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < float64(maxRetryAfter/time.Second) {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return min(d, maxRetryAfter)
		}
	}
	return 0
}

// maxRetryAfter caps absurd provider delays (and keeps float→Duration
// conversion from overflowing).
const maxRetryAfter = 24 * time.Hour

// Unencodable is the verdict when a canonical request cannot be written in
// the provider's wire format (an adapter's Check would have refused it, or
// the request carries invalid raw JSON). It never reaches the provider.
func Unencodable(reason string, err error) *failure.Error {
	return &failure.Error{Class: failure.InvalidRequest, Message: reason, Detail: "request not encodable for this provider: " + reason, Err: err}
}

// ErrStreamClosed is returned by a stream's Next after Close.
var ErrStreamClosed = errors.New("provider: stream closed")
