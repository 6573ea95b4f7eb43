// Package ledger is spillway's content-free, durable record of money and
// identity: virtual keys, budgets, one reservation and one settlement per
// customer request, one row per physical attempt, and usage queries over
// them. No prompt or response column exists anywhere in it.
//
// Writes go through a group-commit Writer so that they stay off the
// response's hot path; Store implementations (SQLite embedded by default,
// PostgreSQL for several replicas) persist batches atomically.
package ledger

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned when a key or budget does not exist.
var ErrNotFound = errors.New("ledger: not found")

// Key is a virtual key as stored: the secret itself is never stored, only
// its SHA-256 hash.
type Key struct {
	ID   string // public id, e.g. "key_3f9a…"; shown in lists and usage
	Hash []byte // SHA-256 of the secret
	// Prefix is the first characters of the secret, to recognise it in lists.
	Prefix string
	Org    string
	Team   string
	// Models restricts the key to these public model names; empty = all.
	Models []string
	// Residency is where the key's requests' data must stay (e.g. "eu");
	// routing sends them only to deployments there. Empty: no constraint
	// (a request header may then name one).
	Residency string
	// Priority is the key's requests' priority for shedding (low, normal,
	// high, critical) and the most a request header may claim. Empty:
	// normal.
	Priority  string
	CreatedAt time.Time
	// RevokedAt is zero while the key is valid.
	RevokedAt time.Time
}

// AdminKey is the gateway's admin credential as stored (its SHA-256 hash,
// never the secret). One is valid at a time; rotating revokes the others.
type AdminKey struct {
	ID        string
	Hash      []byte
	Prefix    string
	CreatedAt time.Time
	// RevokedAt is zero while the key is valid.
	RevokedAt time.Time
}

// Scope kinds for budgets and limits.
const (
	ScopeOrg   = "org"
	ScopeTeam  = "team"
	ScopeKey   = "key"
	ScopeModel = "model"
)

// IsScope reports whether kind is one of the scope kinds.
func IsScope(kind string) bool {
	switch kind {
	case ScopeOrg, ScopeTeam, ScopeKey, ScopeModel:
		return true
	}
	return false
}

// Budget is the limits of one scope. Nil or zero fields mean "no limit".
type Budget struct {
	Scope string `json:"scope"` // org, team, key, model
	ID    string `json:"id"`    // the org/team name, key id, or public model name
	// CreditMicroUSD is the total that may ever be spent (a balance).
	CreditMicroUSD *int64 `json:"credit_micro_usd"`
	// DailyCapMicroUSD is the most that may be spent per UTC day.
	DailyCapMicroUSD *int64    `json:"daily_cap_micro_usd"`
	RPM              int       `json:"rpm"` // requests per minute; 0 = no limit
	TPM              int       `json:"tpm"` // tokens per minute; 0 = no limit
	UpdatedAt        time.Time `json:"updated_at"`
}

// Reservation is the worst-case hold made once per customer request
// before any provider is called.
type Reservation struct {
	RequestID   string
	KeyID       string
	Org, Team   string
	PublicModel string
	AmountMicro int64
	CreatedAt   time.Time
}

// Request is the one settled row of a customer request.
type Request struct {
	RequestID   string
	Org, Team   string
	KeyID       string
	PublicModel string
	// ExactModel and Deployment name what served; empty when nothing did.
	ExactModel string
	Deployment string
	// RouteDepth is the serving rung's index in its pool (0 = primary); -1
	// when nothing served.
	RouteDepth int
	Attempts   int
	// Status: "ok", "interrupted" (broke after commit), "failed",
	// "cancelled" (the caller left), "refused" (a gate said no).
	Status string
	// FailureClass is the final failure's class; "" when ok.
	FailureClass string
	InputTokens  int
	OutputTokens int
	CachedTokens int
	CostMicroUSD int64
	// CostStatus: "priced", "unpriced" (bring-your-own-key), "none" (nothing
	// billable happened).
	CostStatus       string
	ReservedMicroUSD int64
	// Streamed is true for a streamed answer.
	Streamed     bool
	FirstTokenMS int64
	LatencyMS    int64
	StartedAt    time.Time
	FinishedAt   time.Time
	// Exercise is true when routing sent the request to a secondary rung
	// first to keep its failover path exercised (a route's exercise share).
	Exercise bool
}

// Attempt is one physical dispatch to one deployment.
type Attempt struct {
	RequestID    string
	Seq          int // 0, 1, ... in dispatch order
	Deployment   string
	FailureClass string // "" when this attempt served
	HTTPStatus   int    // provider status; 0 when no response
	InputTokens  int
	OutputTokens int
	// CostMicroUSD is the serving attempt's cost (the request's). A
	// hedged_lost or refused hop carries what the operator pays for it
	// (the caller never does); every other failed hop 0.
	CostMicroUSD int64
	FirstByteMS  int64
	DurationMS   int64
	StartedAt    time.Time
}

// Settlement closes one reservation with its request row and attempt rows.
type Settlement struct {
	Request  Request
	Attempts []Attempt
}

// OrphanAfter is the age past which an open reservation is released by
// any replica's start-up recovery, whichever replica wrote it: no request
// runs that long (every attempt is bounded by its deployment's timeouts),
// so its replica is gone for good, its journal (and identity) lost with
// its disk, and would never release it itself.
const OrphanAfter = 24 * time.Hour

// Batch is what one group commit writes, atomically.
type Batch struct {
	Reservations []Reservation
	Settlements  []Settlement
	// Owner stamps every reservation of the batch with the journal that
	// holds it (Journal.ID: one per replica, kept across its restarts), so
	// that RecoverOpen releases a replica's own reservations and never
	// those another replica has in flight. Empty: no owner (a Writer
	// without a journal); any replica's RecoverOpen releases those.
	Owner string
}

// Released is a reservation found open at start-up (the gateway died
// between reserving and settling), now released.
type Released struct {
	Reservation
}

// Repaired is one row Repair rewrote.
type Repaired struct {
	RequestID string
	// Seq is the attempt's seq, or -1 for the request row.
	Seq int
	// What says which figures were out of bounds and what they became.
	What string
}

// Spend is what a scope spent: in total and on one UTC day.
type Spend struct {
	Scope      string
	ID         string
	TotalMicro int64
	TodayMicro int64
}

// UsageQuery selects and groups settled requests.
type UsageQuery struct {
	From, To time.Time // [From, To); zero = unbounded
	// GroupBy is any of "org", "team", "key", "model", "deployment", "day";
	// empty = one total row.
	GroupBy []string
	// Filters restrict rows (e.g. {"key": "key_123"}); same names as GroupBy.
	Filters map[string]string
}

// UsageRow is one group of a usage report.
type UsageRow struct {
	Group        map[string]string `json:"group"`
	Requests     int64             `json:"requests"`
	Succeeded    int64             `json:"succeeded"`
	Failed       int64             `json:"failed"`
	FailedOver   int64             `json:"failed_over"` // served by a rung past the first attempt
	Attempts     int64             `json:"attempts"`
	InputTokens  int64             `json:"input_tokens"`
	OutputTokens int64             `json:"output_tokens"`
	CachedTokens int64             `json:"cached_tokens"`
	CostMicroUSD int64             `json:"cost_micro_usd"`
}

// Store persists the ledger. Implementations must be safe for concurrent
// use; WriteBatch must be atomic (all of a batch or none of it).
type Store interface {
	// WriteBatch persists reservations and settlements in one transaction.
	// A settlement whose request id already has a settled row is skipped,
	// never written twice.
	WriteBatch(ctx context.Context, b *Batch) error
	// RecoverOpen releases every reservation without a settlement that
	// owner wrote (Batch.Owner), those written without an owner, and any
	// older than OrphanAfter, and returns them, oldest first, for the
	// start-up report. Other owners' recent open reservations (replicas
	// still running) are left alone.
	RecoverOpen(ctx context.Context, owner string) ([]Released, error)
	// Spends sums settled cost per scope, in total and since dayStart
	// (truncated to its UTC day), from the per-scope aggregates: its cost
	// does not grow with the ledger's history, and pruning raw rows never
	// changes it.
	Spends(ctx context.Context, dayStart time.Time) ([]Spend, error)
	// Usage reports settled requests.
	Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error)
	// Repair rewrites rows whose figures are impossible (negative, or
	// beyond MaxTokens or MaxCostMicro, as an older gateway could store
	// from a hostile provider): counts out of bounds become 0, a cost
	// out of bounds the request's reservation (0 when that is out of
	// bounds too). It returns what it changed.
	Repair(ctx context.Context) ([]Repaired, error)

	CreateKey(ctx context.Context, k *Key) error
	KeyByHash(ctx context.Context, hash []byte) (*Key, error)
	Keys(ctx context.Context) ([]Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error

	// AdminKeys lists the admin credentials, revoked ones included, oldest
	// first.
	AdminKeys(ctx context.Context) ([]AdminKey, error)
	// RotateAdminKey stores k and revokes every other admin key, at once.
	RotateAdminKey(ctx context.Context, k *AdminKey) error

	SetBudget(ctx context.Context, b *Budget) error
	Budgets(ctx context.Context) ([]Budget, error)

	Auditor

	Close() error
}
