package keys

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// countingStore counts lookups that reach the database.
type countingStore struct {
	Store
	lookups atomic.Int32
}

func (c *countingStore) KeyByHash(ctx context.Context, h []byte) (*ledger.Key, error) {
	c.lookups.Add(1)
	return c.Store.KeyByHash(ctx, h)
}

func open(t *testing.T) *countingStore {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &countingStore{Store: s}
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := NewAuthenticator(st, slog.New(slog.DiscardHandler), func() time.Time { return now })

	t.Run("missing and unknown keys", func(t *testing.T) {
		if _, err := a.Authenticate(ctx, ""); !errors.Is(err, ErrMissing) {
			t.Errorf("empty: %v", err)
		}
		for i := 0; i < 3; i++ {
			if _, err := a.Authenticate(ctx, "sk-spw-nope"); !errors.Is(err, ErrInvalid) {
				t.Errorf("unknown: %v", err)
			}
		}
		if n := st.lookups.Load(); n != 1 {
			t.Errorf("an unknown key reached the store %d times, want once (then remembered)", n)
		}
	})

	secret, k, err := New(ctx, st, "acme", "search", []string{"m1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, SecretPrefix) || len(secret) < 40 || !strings.HasPrefix(secret, k.Prefix) {
		t.Fatalf("secret %q prefix %q", secret, k.Prefix)
	}
	t.Run("a key created elsewhere is found in the store, then served from memory", func(t *testing.T) {
		before := st.lookups.Load()
		for i := 0; i < 3; i++ {
			got, err := a.Authenticate(ctx, secret)
			if err != nil || got.ID != k.ID || got.Org != "acme" || got.Team != "search" {
				t.Fatalf("Authenticate = %+v, %v", got, err)
			}
		}
		if n := st.lookups.Load() - before; n != 1 {
			t.Errorf("%d store lookups for a known key, want 1", n)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		if err := a.Revoke(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(ctx, secret); !errors.Is(err, ErrRevoked) {
			t.Errorf("revoked: %v", err)
		}
	})
	t.Run("the secret itself is never stored", func(t *testing.T) {
		ks, err := st.Keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, kk := range ks {
			if string(kk.Hash) == secret || strings.Contains(kk.Prefix, secret[len(SecretPrefix)+6:]) {
				t.Error("secret stored")
			}
		}
	})
}

func TestFromHeadersAndAllows(t *testing.T) {
	tests := []struct{ auth, xkey, want string }{
		{"Bearer sk-1", "", "sk-1"},
		{"bearer  sk-2 ", "", "sk-2"},
		{"", "sk-3", "sk-3"},
		{"Basic abc", "sk-4", "sk-4"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := FromHeaders(tt.auth, tt.xkey); got != tt.want {
			t.Errorf("FromHeaders(%q, %q) = %q, want %q", tt.auth, tt.xkey, got, tt.want)
		}
	}
	k := &ledger.Key{Models: []string{"a"}}
	if !Allows(k, "a") || Allows(k, "b") || !Allows(&ledger.Key{}, "anything") {
		t.Error("Allows")
	}
}
