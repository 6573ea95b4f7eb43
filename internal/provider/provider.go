// Package provider defines the upstream adapter contract: how one canonical
// request is sent to one deployment and its answer read back, and the
// registry that finds an adapter by provider kind.
package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// Target is everything an adapter needs to reach one deployment for one
// attempt. Adapters keep no state of their own between calls.
type Target struct {
	// Deployment is the deployment id, for logs only.
	Deployment string
	// BaseURL is the provider's base, e.g. "https://api.openai.com" (no
	// trailing slash; adapters append the versioned path).
	BaseURL string
	// Model is the provider's own model id.
	Model string
	// APIKey is the resolved credential (never written to config or logs):
	// a bearer token, x-api-key or x-goog-api-key value, or a Bedrock API
	// key. Empty for a Bedrock deployment that signs with AWS keys instead.
	APIKey string
	// AWS holds SigV4 keys for a Bedrock deployment without an API key.
	AWS *AWSKeys
	// Region is the provider region, when it has one.
	Region string
	// MaxOutputTokens is the deployment's output cap; adapters whose
	// provider requires a max-tokens field use it when the request sets none.
	MaxOutputTokens int
	// IdempotencyKey is sent upstream as Idempotency-Key when not empty.
	IdempotencyKey string
	// HTTP is the client to use; its transport carries the connect timeout.
	HTTP *http.Client
}

// AWSKeys are resolved AWS credentials for SigV4 signing.
type AWSKeys struct {
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken is set for temporary credentials.
	SessionToken string
}

// Adapter speaks one provider's wire format, in streams only: a request
// whose caller wanted no stream is still streamed upstream, and the engine
// assembles the answer, so the silence bounds hold throughout and a
// provider that dies halfway fails over. Errors are *failure.Error values:
// transport failures with NoResponse set when no byte arrived, and error
// answers classified by failure.Classify. Adapters do not enforce
// timeouts: the engine cancels ctx when a silence bound fires.
type Adapter interface {
	// Stream sends req through the provider's streaming API (an
	// embeddings request, which providers answer whole, through its own
	// endpoint). It returns once response headers arrived with a success
	// status; the stream yields the events.
	Stream(ctx context.Context, t *Target, req *canonical.Request) (canonical.Stream, error)
}

// Checker is implemented by adapters that cannot express every canonical
// feature. Check returns a reason when req cannot be sent faithfully, so the
// rung is skipped rather than the feature silently dropped.
type Checker interface {
	Check(req *canonical.Request) error
}

// TokenCounter is implemented by adapters whose provider has an endpoint
// that counts a request's input tokens (Anthropic's count_tokens). The
// count is the provider's own, for the request as the adapter would send
// it; it costs nothing and is never billed.
type TokenCounter interface {
	CountTokens(ctx context.Context, t *Target, req *canonical.Request) (int, error)
}

// Registry maps provider kinds ("openai", "anthropic", ...) to adapters.
type Registry struct {
	adapters map[string]Adapter
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{adapters: map[string]Adapter{}} }

// Register adds an adapter under kind. A duplicate kind is a programming
// error and panics.
func (r *Registry) Register(kind string, a Adapter) {
	if _, dup := r.adapters[kind]; dup {
		panic(fmt.Sprintf("provider: kind %q registered twice", kind))
	}
	r.adapters[kind] = a
}

// Get returns the adapter for kind.
func (r *Registry) Get(kind string) (Adapter, bool) {
	a, ok := r.adapters[kind]
	return a, ok
}

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	ks := make([]string, 0, len(r.adapters))
	for k := range r.adapters {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// BetaUnsupported is the reason a rung that does not speak Claude's own
// API gives for an anthropic-beta flag it cannot honour.
func BetaUnsupported(flag string) string {
	return "beta " + flag + ": only Claude's own API (Anthropic, Bedrock) honours it"
}

// ForeignThinking names the first reasoning block in req's history that
// only another provider family can read (its signature would be refused),
// "" when every block is family's own or there is none. A rung whose
// family is "" reads no reasoning at all.
func ForeignThinking(req *canonical.Request, family canonical.Family) string {
	for i := range req.Messages {
		for _, p := range req.Messages[i].Content {
			if (p.Type == canonical.PartThinking || p.Type == canonical.PartRedactedThinking) && p.Family != family {
				return "the conversation holds reasoning signed by " + string(p.Family) + ", which only that provider family can read back"
			}
		}
	}
	return ""
}

// Errors of an embeddings answer that does not fit its request.
var (
	ErrEmbeddingIndex = errors.New("an embedding's index is out of range or repeated")
	ErrEmbeddingUsage = errors.New("the reported usage is negative or absurd")
)
