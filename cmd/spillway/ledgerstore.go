package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/postgres"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// openedStore is the ledger store the config names, and what the gateway
// needs to know about it.
type openedStore struct {
	ledger.Store
	// fresh: the SQLite file did not exist and was created now.
	fresh bool
	// watch lists the files the store lives in (the SQLite file; nothing
	// for PostgreSQL, whose journal the Writer watches itself).
	watch []string
	// desc names the store for start-up lines and logs: the SQLite file,
	// or the PostgreSQL DSN with its password redacted.
	desc string
}

// openLedgerStore opens the ledger cfg names: the SQLite file at path
// (created when missing), or, with ledger.driver postgres, the database
// whose DSN the variable ledger.dsn_env names (its schema migrated under an
// advisory lock). The DSN's password is never logged or printed.
func openLedgerStore(ctx context.Context, cfg *catalog.Config, cfgFile, path string) (*openedStore, error) {
	if cfg.Ledger.Driver != catalog.LedgerPostgres {
		_, statErr := os.Stat(path)
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("opening the ledger %s: %w", path, err)
		}
		return &openedStore{Store: st, fresh: errors.Is(statErr, fs.ErrNotExist), watch: []string{path}, desc: path}, nil
	}
	dsn, ps := cfg.LedgerDSN(cfgFile, os.LookupEnv)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	desc := "postgres " + postgres.Redact(dsn)
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the PostgreSQL ledger (%s, from $%s): %w", postgres.Redact(dsn), cfg.Ledger.DSNEnv, err)
	}
	return &openedStore{Store: st, desc: desc}, nil
}

// openShared opens the PostgreSQL ledger for a CLI command when the
// config (not --db, which names a SQLite file) says ledger.driver
// postgres; ok is false otherwise, and the SQLite path goes on. The
// database must hold a ledger already: a wrong DSN is an error, never an
// empty ledger.
func (lf ledgerFlags) openShared(ctx context.Context) (_ ledger.Store, ok bool, _ error) {
	if *lf.db != "" {
		return nil, false, nil
	}
	cfgPath, err := lf.configPath()
	if err != nil {
		return nil, false, nil // the SQLite path reports it
	}
	cfg, err := catalog.Load(cfgPath)
	if err != nil || cfg.Ledger.Driver != catalog.LedgerPostgres {
		return nil, false, nil
	}
	dsn, ps := cfg.LedgerDSN(cfgPath, os.LookupEnv)
	if err := ps.Err(); err != nil {
		return nil, true, err
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{MustExist: true})
	if err != nil {
		return nil, true, fmt.Errorf("opening the PostgreSQL ledger (%s, from $%s): %w", postgres.Redact(dsn), cfg.Ledger.DSNEnv, err)
	}
	return st, true, nil
}
