// Package keys issues virtual keys and authenticates callers by them. A
// key's secret is shown once, at creation; only its SHA-256 hash is stored.
// Authentication reads an in-memory copy of the key table, so the request
// path never waits on the database for a known key.
package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// SecretPrefix starts every secret, so leaked keys are easy to scan for.
const SecretPrefix = "sk-spw-"

// Errors Authenticate returns.
var (
	ErrMissing = errors.New("keys: no key")
	ErrInvalid = errors.New("keys: unknown key")
	ErrRevoked = errors.New("keys: revoked key")
)

// Store is what this package needs of the ledger.
type Store interface {
	CreateKey(ctx context.Context, k *ledger.Key) error
	KeyByHash(ctx context.Context, hash []byte) (*ledger.Key, error)
	Keys(ctx context.Context) ([]ledger.Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error
}

// Creator is what making a key needs of the ledger.
type Creator interface {
	CreateKey(ctx context.Context, k *ledger.Key) error
}

// Hash is the stored form of a secret.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// New generates a key for org/team, stores it, and returns the secret
// (shown once) with the stored record.
func New(ctx context.Context, s Creator, org, team string, models []string, now time.Time) (string, *ledger.Key, error) {
	return NewKey(ctx, s, Spec{Org: org, Team: team, Models: models}, now)
}

// Spec is what a new key is for.
type Spec struct {
	Org, Team string
	// Models restricts the key to these public models; empty = all.
	Models []string
	// Residency keeps the key's requests on deployments there.
	Residency string
	// Priority is the key's requests' priority for shedding and the most a
	// request may claim (low, normal, high, critical); "" is normal.
	Priority string
}

// NewKey generates a key to spec, stores it, and returns the secret
// (shown once) with the stored record.
func NewKey(ctx context.Context, s Creator, spec Spec, now time.Time) (string, *ledger.Key, error) {
	org, team, models := spec.Org, spec.Team, spec.Models
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	secret := SecretPrefix + hex.EncodeToString(raw[:])
	var idb [6]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", nil, err
	}
	k := &ledger.Key{
		ID:        "key_" + hex.EncodeToString(idb[:]),
		Hash:      Hash(secret),
		Prefix:    secret[:len(SecretPrefix)+6],
		Org:       org,
		Team:      team,
		Models:    models,
		Residency: spec.Residency,
		Priority:  spec.Priority,
		CreatedAt: now.UTC(),
	}
	if err := s.CreateKey(ctx, k); err != nil {
		return "", nil, err
	}
	return secret, k, nil
}

// FromHeaders returns the caller's secret from "Authorization: Bearer" or
// "x-api-key" (Anthropic's SDKs send the latter).
func FromHeaders(authorization, xAPIKey string) string {
	if a := strings.TrimSpace(authorization); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return strings.TrimSpace(xAPIKey)
}

// Authenticator answers "whose key is this?" from memory, falling back to
// the store for a key it has not seen (created by the CLI since the last
// refresh), and remembering misses briefly so that garbage keys cannot turn
// into a database read per request.
type Authenticator struct {
	store Store
	log   *slog.Logger
	now   func() time.Time

	table atomic.Pointer[map[[32]byte]*ledger.Key]

	mu     sync.Mutex
	misses map[[32]byte]time.Time
}

// missTTL is how long an unknown key is remembered as unknown.
const missTTL = 5 * time.Second

// maxMisses bounds the miss cache; past it the cache is cleared.
const maxMisses = 10000

// NewAuthenticator returns an Authenticator; call Refresh before serving.
func NewAuthenticator(s Store, log *slog.Logger, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{store: s, log: log, now: now, misses: map[[32]byte]time.Time{}}
	empty := map[[32]byte]*ledger.Key{}
	a.table.Store(&empty)
	return a
}

// Refresh reloads the whole key table (revocations made elsewhere show up).
func (a *Authenticator) Refresh(ctx context.Context) error {
	ks, err := a.store.Keys(ctx)
	if err != nil {
		return err
	}
	t := make(map[[32]byte]*ledger.Key, len(ks))
	for i := range ks {
		var h [32]byte
		copy(h[:], ks[i].Hash)
		t[h] = &ks[i]
	}
	a.table.Store(&t)
	a.mu.Lock()
	clear(a.misses)
	a.mu.Unlock()
	return nil
}

// Run refreshes every interval until ctx ends. The caller owns the
// goroutine it runs in.
func (a *Authenticator) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.Refresh(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("refreshing virtual keys", "err", err)
			}
		}
	}
}

// Count is the number of known keys, revoked included.
func (a *Authenticator) Count() int { return len(*a.table.Load()) }

// Authenticate returns the valid key whose secret this is.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (*ledger.Key, error) {
	if secret == "" {
		return nil, ErrMissing
	}
	h := sha256.Sum256([]byte(secret))
	if k, ok := (*a.table.Load())[h]; ok {
		return valid(k)
	}
	now := a.now()
	a.mu.Lock()
	until, missed := a.misses[h]
	a.mu.Unlock()
	if missed && now.Before(until) {
		return nil, ErrInvalid
	}
	k, err := a.store.KeyByHash(ctx, h[:])
	if errors.Is(err, ledger.ErrNotFound) {
		a.mu.Lock()
		if len(a.misses) >= maxMisses {
			clear(a.misses)
		}
		a.misses[h] = now.Add(missTTL)
		a.mu.Unlock()
		return nil, ErrInvalid
	}
	if err != nil {
		return nil, err
	}
	a.learn(h, k)
	return valid(k)
}

// learn adds one key to the in-memory table (copy on write).
func (a *Authenticator) learn(h [32]byte, k *ledger.Key) {
	for {
		old := a.table.Load()
		t := make(map[[32]byte]*ledger.Key, len(*old)+1)
		for kh, kv := range *old {
			t[kh] = kv
		}
		t[h] = k
		if a.table.CompareAndSwap(old, &t) {
			return
		}
	}
}

// Revoke revokes a key in the store and at once in memory.
func (a *Authenticator) Revoke(ctx context.Context, id string) error {
	if err := a.store.RevokeKey(ctx, id, a.now().UTC()); err != nil {
		return err
	}
	return a.Refresh(ctx)
}

func valid(k *ledger.Key) (*ledger.Key, error) {
	if !k.RevokedAt.IsZero() {
		return nil, ErrRevoked
	}
	return k, nil
}

// Allows reports whether the key may call the public model.
func Allows(k *ledger.Key, model string) bool {
	if len(k.Models) == 0 {
		return true
	}
	for _, m := range k.Models {
		if m == model {
			return true
		}
	}
	return false
}
