package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Request asks for a key, as the admin API's POST /v1/admin/keys and
// spillway keys create write it.
type Request struct {
	Org    string   `json:"org"`
	Team   string   `json:"team"`
	Models []string `json:"models,omitempty"`
	// Residency keeps the key's requests on deployments there (e.g. "eu").
	Residency string `json:"residency,omitempty"`
	// Priority is the key's requests' priority when shedding (low,
	// normal, high, critical) and the most a request header may claim.
	// Default normal.
	Priority string `json:"priority,omitempty"`
	// Limits are the key's own (key scope); none by default.
	ledger.Limits
}

// Created is a new key: the secret appears here once and never again.
type Created struct {
	ID     string   `json:"id"`
	Key    string   `json:"key"`
	Org    string   `json:"org"`
	Team   string   `json:"team"`
	Models []string `json:"models,omitempty"`
}

// Info is a key as listed (no secret).
type Info struct {
	ID        string     `json:"id"`
	Prefix    string     `json:"prefix"`
	Org       string     `json:"org"`
	Team      string     `json:"team"`
	Models    []string   `json:"models,omitempty"`
	Residency string     `json:"residency,omitempty"`
	Priority  string     `json:"priority,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// LimitStore is what Create needs of the ledger: the key, and its own
// budget when it has limits.
type LimitStore interface {
	Creator
	SetBudget(ctx context.Context, b *ledger.Budget) error
}

// Create makes a key with its optional key-scope limits.
func Create(ctx context.Context, st LimitStore, kr *Request, now time.Time) (*Created, error) {
	if kr.Org == "" || kr.Team == "" {
		return nil, errors.New("org and team are required")
	}
	if _, ok := catalog.ParsePriority(kr.Priority); !ok {
		return nil, fmt.Errorf("priority %q is not one of %s", kr.Priority, strings.Join(catalog.PriorityNames[:], ", "))
	}
	var b *ledger.Budget
	if !kr.Limits.Empty() {
		var err error
		if b, err = kr.Limits.Budget(ledger.ScopeKey, "", now); err != nil {
			return nil, err
		}
	}
	secret, k, err := NewKey(ctx, st, Spec{Org: kr.Org, Team: kr.Team, Models: kr.Models, Residency: kr.Residency, Priority: kr.Priority}, now)
	if err != nil {
		return nil, err
	}
	if b != nil {
		b.ID = k.ID
		if err := st.SetBudget(ctx, b); err != nil {
			return nil, err
		}
	}
	return &Created{ID: k.ID, Key: secret, Org: k.Org, Team: k.Team, Models: k.Models}, nil
}

// Lister is what List needs of the ledger.
type Lister interface {
	Keys(ctx context.Context) ([]ledger.Key, error)
}

// List lists keys without secrets.
func List(ctx context.Context, st Lister) ([]Info, error) {
	ks, err := st.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ks))
	for _, k := range ks {
		ki := Info{ID: k.ID, Prefix: k.Prefix, Org: k.Org, Team: k.Team, Models: k.Models, Residency: k.Residency, Priority: k.Priority, CreatedAt: k.CreatedAt}
		if !k.RevokedAt.IsZero() {
			t := k.RevokedAt
			ki.RevokedAt = &t
		}
		out = append(out, ki)
	}
	return out, nil
}
