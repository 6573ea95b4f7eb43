package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
)

const adminUsage = `usage:
  spillway admin rotate [--config FILE | --db FILE]

Creates a new admin key and prints it once; every earlier admin key stops
working (a running gateway picks the change up within 5 s). The admin key
guards /v1/admin/*, spillway health and spillway explain; the gateway
prints the first one at its first start.
`

var adminSubs = []string{"rotate"}

// runAdmin is "spillway admin rotate".
func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	_, args, err := subcommand("admin", adminUsage, adminSubs, args, stderr)
	if err != nil {
		return err
	}
	fs := newFlags("admin rotate", adminUsage, stderr)
	lf := addLedgerFlags(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	return lf.withStore(ctx, func(st ledger.Store) error {
		secret, k, err := keys.NewAdmin(ctx, st, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created admin key %s; every earlier admin key stops working within %s. The key is shown once; keep it:\n%s\n",
			k.ID, refreshEvery, secret)
		return nil
	})
}
