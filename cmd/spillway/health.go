package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/server"
)

// runHealth prints a running gateway's deployment health as a table.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("health", `usage: spillway health [--url URL]

A running gateway's deployment health and each route's healthy rungs, as a
table. Needs SPILLWAY_ADMIN_KEY set to the gateway's admin key.`, stderr)
	base := fs.String("url", defaultGatewayURL, "the gateway's base URL (http:// is assumed when no scheme is given)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	var rep server.HealthReport
	if err := adminGet(ctx, *base, "/v1/admin/health", &rep); err != nil {
		return err
	}
	printHealth(stdout, &rep, time.Now())
	return nil
}

func printHealth(w io.Writer, rep *server.HealthReport, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEPLOYMENT\tSTATE\tREASON\tSINCE\tRETRY IN\tATTEMPTS\tOK\tFAILED\tSKIPPED\tERR RATE\tP95 TTFT")
	for _, d := range rep.Deployments {
		var failed int64
		for _, n := range d.Failures {
			failed += n
		}
		retry := "-"
		if d.RetryAt != nil && d.RetryAt.After(now) {
			retry = d.RetryAt.Sub(now).Round(time.Second).String()
		}
		if d.ThrottledUntil != nil && d.ThrottledUntil.After(now) {
			retry = d.ThrottledUntil.Sub(now).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s\t%d\t%d\t%d\t%d\t%.1f%%\t%.0fms\n", d.Deployment, d.State, orDash(d.Reason),
			now.Sub(d.Since).Round(time.Second), retry, d.Attempts, d.Successes, failed, d.Skipped, 100*d.ErrorRate, d.P95Millis)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ROUTE\tPOOL\tEXACT MODEL\tHEALTHY RUNGS")
	for _, r := range rep.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\n", r.Model, r.Pool, r.ExactModel, r.HealthyRungs, r.Rungs)
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
