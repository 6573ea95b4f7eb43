// Package bedrock is the upstream adapter for AWS Bedrock's ConverseStream
// API (InvokeModel for embeddings), authenticated with a Bedrock API key or
// SigV4.
package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Adapter speaks Converse. Everything about the deployment comes in the
// Target; the adapter holds only the SigV4 signer (whose signing-key cache
// is safe for concurrent use) and its clock.
type Adapter struct {
	signer *v4.Signer
	// now is the signing clock; tests fix it.
	now func() time.Time
}

var (
	_ provider.Adapter = (*Adapter)(nil)
	_ provider.Checker = (*Adapter)(nil)
)

// New returns the adapter.
func New() provider.Adapter { return &Adapter{signer: v4.NewSigner(), now: time.Now} }

const (
	// signingName is Bedrock runtime's SigV4 service name (not the host's
	// "bedrock-runtime").
	signingName = "bedrock"
	// eventStreamType is ConverseStream's success content type.
	eventStreamType = "application/vnd.amazon.eventstream"
	// requestIDHeader carries the only id a Converse answer has.
	requestIDHeader = "X-Amzn-Requestid"
)

// Check reports why req cannot be sent faithfully through Converse, so the
// rung is skipped instead of a feature being dropped.
func (*Adapter) Check(req *canonical.Request) error {
	if req.Embed != nil {
		if reason := embedCheck(req); reason != "" {
			return errors.New(reason)
		}
		return nil
	}
	if reason := unsupported(req); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// Stream sends req through ConverseStream and returns once a 2xx arrived.
func (a *Adapter) Stream(ctx context.Context, t *provider.Target, req *canonical.Request) (canonical.Stream, error) {
	if req.Embed != nil {
		return a.embed(ctx, t, req)
	}
	resp, err := a.send(ctx, t, req)
	if err != nil {
		return nil, err
	}
	// A JSON body where an event stream was asked for is an error answer
	// (or garbage); it never yields events.
	if provider.IsJSON(resp.Header) {
		return nil, jsonInsteadOfStream(resp)
	}
	return newStream(resp.Body, resp.Header.Get(requestIDHeader), t.Model), nil
}

func (a *Adapter) send(ctx context.Context, t *provider.Target, req *canonical.Request) (*http.Response, error) {
	// The engine should have called Check; refusing here keeps a skipped
	// check from turning into a silently degraded request.
	if reason := unsupported(req); reason != "" {
		return nil, provider.Unencodable(reason, nil)
	}
	body, err := encode(req, t)
	if err != nil {
		return nil, provider.Unencodable("the request could not be encoded for this provider", err)
	}
	hreq, err := a.newRequest(ctx, t, body, opConverseStream, eventStreamType)
	if err != nil {
		return nil, err
	}
	resp, err := provider.Do(t, hreq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, errorAnswer(resp)
	}
	return resp, nil
}

// newRequest builds the signed (or bearer-authenticated) POST. Converse has
// no idempotency key (wire-formats.md §0), so t.IdempotencyKey is not sent:
// it would mean nothing to Bedrock.
func (a *Adapter) newRequest(ctx context.Context, t *provider.Target, body []byte, op, accept string) (*http.Request, error) {
	misbound := func(detail string, err error) error {
		return &failure.Error{Class: failure.ProviderBindingInvalid, NoResponse: true, Detail: detail, Err: err}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, t.BaseURL, bytes.NewReader(body))
	if err != nil {
		// Only a malformed BaseURL gets here: the deployment is misbound.
		return nil, misbound("cannot build the upstream request", err)
	}
	setPath(hreq, t.Model, op)
	h := hreq.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", accept)
	if t.APIKey != "" {
		h.Set("Authorization", "Bearer "+t.APIKey)
		return hreq, nil
	}
	if t.AWS == nil || t.AWS.AccessKeyID == "" || t.AWS.SecretAccessKey == "" {
		return nil, misbound("no Bedrock API key and no AWS keys to sign with", nil)
	}
	if t.Region == "" {
		return nil, misbound("SigV4 needs the deployment's region", nil)
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: t.AWS.AccessKeyID, SecretAccessKey: t.AWS.SecretAccessKey, SessionToken: t.AWS.SessionToken}
	if err := a.signer.SignHTTP(ctx, creds, hreq, hex.EncodeToString(sum[:]), signingName, t.Region, a.now()); err != nil {
		return nil, misbound("cannot sign the upstream request", err)
	}
	return hreq, nil
}

// The operations spillway calls, as path suffixes.
const (
	opConverseStream = "/converse-stream"
	opInvoke         = "/invoke"
)

// setPath appends /model/{modelId}/{op} to the base path. The
// model id is a path label that the AWS SDK percent-encodes whole (':' and
// '/' included, so an inference-profile ARN stays one segment); RawPath
// keeps that encoding on the wire, where Path alone would send the ARN's '/'
// as a separator.
func setPath(r *http.Request, model, op string) {
	u := r.URL
	base := u.EscapedPath()
	if n := len(base); n > 0 && base[n-1] == '/' {
		base = base[:n-1]
	}
	rawBase, plainBase := base, u.Path
	if n := len(plainBase); n > 0 && plainBase[n-1] == '/' {
		plainBase = plainBase[:n-1]
	}
	u.Path = plainBase + "/model/" + model + op
	u.RawPath = rawBase + "/model/" + httpbinding.EscapePath(model, true) + op
}
