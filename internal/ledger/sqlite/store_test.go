package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/ledgertest"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return openTemp(t) })
}
