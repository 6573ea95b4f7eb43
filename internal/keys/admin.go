package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"time"

	"sync/atomic"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// AdminPrefix starts every admin secret: told apart from a virtual key at
// a glance, and by a secret scanner.
const AdminPrefix = "sk-spw-admin-"

// AdminStore is what the admin credential needs of the ledger.
type AdminStore interface {
	AdminKeys(ctx context.Context) ([]ledger.AdminKey, error)
	RotateAdminKey(ctx context.Context, k *ledger.AdminKey) error
}

// NewAdmin generates an admin key, stores it in place of any other (which
// stop working), and returns the secret, shown once.
func NewAdmin(ctx context.Context, s AdminStore, now time.Time) (string, *ledger.AdminKey, error) {
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	secret := AdminPrefix + hex.EncodeToString(raw[:])
	var idb [6]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", nil, err
	}
	k := &ledger.AdminKey{ID: "adm_" + hex.EncodeToString(idb[:]), Hash: Hash(secret),
		Prefix: secret[:len(AdminPrefix)+6], CreatedAt: now.UTC()}
	if err := s.RotateAdminKey(ctx, k); err != nil {
		return "", nil, err
	}
	return secret, k, nil
}

// AdminAuth checks the admin credential: the valid key in the ledger
// (refreshed, so a rotation by the CLI takes effect within one refresh),
// and a fixed secret from the environment when one is given.
type AdminAuth struct {
	store AdminStore
	fixed string
	hash  atomic.Pointer[[32]byte] // nil: no valid key in the ledger
}

// NewAdminAuth returns an AdminAuth over s (nil: the fixed secret only),
// also accepting fixed when it is not empty. Call Refresh before serving.
func NewAdminAuth(s AdminStore, fixed string) *AdminAuth {
	return &AdminAuth{store: s, fixed: fixed}
}

// Refresh reloads the valid admin key from the store.
func (a *AdminAuth) Refresh(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	ks, err := a.store.AdminKeys(ctx)
	if err != nil {
		return err
	}
	var h *[32]byte
	for i := range ks {
		if ks[i].RevokedAt.IsZero() && len(ks[i].Hash) == sha256.Size {
			h = new([32]byte)
			copy(h[:], ks[i].Hash)
		}
	}
	a.hash.Store(h)
	return nil
}

// Enabled reports whether any admin credential exists.
func (a *AdminAuth) Enabled() bool { return a.fixed != "" || a.hash.Load() != nil }

// FromStore reports whether the ledger holds a valid admin key.
func (a *AdminAuth) FromStore() bool { return a.hash.Load() != nil }

// Check reports whether secret is the admin credential, in constant time.
func (a *AdminAuth) Check(secret string) bool {
	if secret == "" {
		return false
	}
	ok := false
	if a.fixed != "" {
		ok = subtle.ConstantTimeCompare([]byte(secret), []byte(a.fixed)) == 1
	}
	if h := a.hash.Load(); h != nil {
		got := sha256.Sum256([]byte(secret))
		ok = subtle.ConstantTimeCompare(got[:], h[:]) == 1 || ok
	}
	return ok
}

// Run refreshes every interval until ctx ends; the caller owns the
// goroutine it runs in.
func (a *AdminAuth) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.Refresh(ctx); err != nil && ctx.Err() == nil && onErr != nil {
				onErr(err)
			}
		}
	}
}
