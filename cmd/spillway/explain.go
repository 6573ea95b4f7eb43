package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/server"
)

// runExplain prints how a running gateway would route a request.
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "http://127.0.0.1:8080", "the gateway's base URL")
	model := fs.String("model", "", "the public model name (required)")
	maxTokens := fs.Int("max-tokens", 0, "the request's max_tokens (0 = unset)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return fmt.Errorf("--model is required")
	}
	q := url.Values{"model": {*model}}
	if *maxTokens > 0 {
		q.Set("max_tokens", strconv.Itoa(*maxTokens))
	}
	var ex server.Explanation
	if err := adminGet(ctx, *base, "/v1/admin/explain?"+q.Encode(), &ex); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "model %s -> pool %s (exact model %s)\n\n", ex.Model, ex.Pool, ex.ExactModel)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUNG\tDEPLOYMENT\tPROVIDER\tHEALTH\tDECISION\tWHY")
	for i, r := range ex.Rungs {
		decision := "kept"
		if !r.Kept {
			decision = "dropped: " + r.Reason
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i, r.Deployment, r.Provider, r.Health, decision, orDash(r.Detail))
	}
	_ = tw.Flush()
	if len(ex.Order) > 0 {
		fmt.Fprintf(stdout, "\norder: %s\n", strings.Join(ex.Order, " -> "))
	} else if ex.LastResort != "" {
		fmt.Fprintf(stdout, "\nno rung is healthy: one last-resort probe would go to %s\n", ex.LastResort)
	} else {
		fmt.Fprintln(stdout, "\nno rung can serve this request")
	}
	return nil
}

// adminGet fetches an admin endpoint with SPILLWAY_ADMIN_KEY into v.
func adminGet(ctx context.Context, base, path string, v any) error {
	key := os.Getenv("SPILLWAY_ADMIN_KEY")
	if key == "" {
		return fmt.Errorf("set SPILLWAY_ADMIN_KEY to the gateway's admin key")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	return nil
}
