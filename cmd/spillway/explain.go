package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
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
	fs := newFlags("explain", `usage: spillway explain --model M [--max-tokens N] [--url URL]

How a running gateway would route a request for the model: each rung kept
or dropped and why, the final order, or the last-resort rung. Needs
SPILLWAY_ADMIN_KEY set to the gateway's admin key.`, stderr)
	base := fs.String("url", defaultGatewayURL, "the gateway's base URL (http:// is assumed when no scheme is given)")
	model := fs.String("model", "", "the public model name (required)")
	maxTokens := fs.Int("max-tokens", 0, "the request's max_tokens (0 = unset)")
	priority := fs.String("priority", "", "the request's priority, for a route that sheds (low, normal, high, critical; default normal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *model == "" {
		return usageErrorf("--model is required (a public model name the gateway routes)")
	}
	if *maxTokens < 0 {
		return usageErrorf("--max-tokens must be positive (or 0 for unset)")
	}
	q := url.Values{"model": {*model}}
	if *maxTokens > 0 {
		q.Set("max_tokens", strconv.Itoa(*maxTokens))
	}
	if *priority != "" {
		q.Set("priority", *priority)
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
		if r.ModelChange != "" {
			decision += " (serves " + r.ModelChange + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i, r.Deployment, r.Provider, r.Health, decision, orDash(r.Detail))
	}
	_ = tw.Flush()
	if len(ex.Order) > 0 {
		fmt.Fprintf(stdout, "\norder: %s\n", strings.Join(ex.Order, " -> "))
	} else if ex.LastResort != "" {
		fmt.Fprintf(stdout, "\nno rung is healthy: one last-resort probe would go to %s\n", ex.LastResort)
	} else if ex.Shed == nil {
		fmt.Fprintln(stdout, "\nno rung can serve this request")
	}
	printRouteOptions(stdout, &ex)
	return nil
}

// printRouteOptions says what an exercise turn or a shed rule decided.
func printRouteOptions(w io.Writer, ex *server.Explanation) {
	if ex.Exercise != "" {
		fmt.Fprintf(w, "exercise: this request goes to %s first, to keep its failover path exercised\n", ex.Exercise)
	}
	if sh := ex.Shed; sh != nil {
		fmt.Fprintf(w, "\nshed: %s is past %.0f%% of its quota (%d requests, %d tokens in the last minute; quota %d rpm, %d tpm): %s priority is refused below %s\n",
			sh.Deployment, 100*sh.At, sh.Requests, sh.Tokens, sh.RPM, sh.TPM, sh.Priority, sh.Below)
	}
}

// defaultGatewayURL is where health and explain look for the gateway.
const defaultGatewayURL = "http://127.0.0.1:8080"

// gatewayURL reads --url: a base URL, or a bare host:port taken as http.
func gatewayURL(raw string) (string, error) {
	s := strings.TrimRight(strings.TrimSpace(raw), "/")
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageErrorf("--url %q is not a gateway address (e.g. %s or 127.0.0.1:8080)", raw, defaultGatewayURL)
	}
	return s, nil
}

// adminGet fetches an admin endpoint with SPILLWAY_ADMIN_KEY into v. Its
// errors say what to do: start the gateway, fix --url, set the key.
func adminGet(ctx context.Context, rawBase, path string, v any) error {
	base, err := gatewayURL(rawBase)
	if err != nil {
		return err
	}
	// Without a key the request still goes out: "not running" and "wrong
	// address" are worth saying before "set the key".
	key := os.Getenv("SPILLWAY_ADMIN_KEY")
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return usageErrorf("--url %q: %v", rawBase, err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return unreachable(base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return gatewayError(base, resp.Status, resp.StatusCode, b, key != "")
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("the answer of %s is not what a spillway gateway sends (%v): is --url the gateway?", base, err)
	}
	return nil
}

// adminTimeout bounds one admin request.
const adminTimeout = 10 * time.Second

// unreachable explains a request to the gateway that got no answer.
func unreachable(base string, err error) error {
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &dns), errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("no gateway answers at %s: is spillway serve running? (--url sets the address)", base)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the gateway at %s did not answer within %v: is it overloaded, or is --url another service?", base, adminTimeout)
	}
	return fmt.Errorf("asking the gateway at %s: %w", base, err)
}

// gatewayError turns a gateway's error answer into its message and what to
// do about it; a body that is not the gateway's error JSON is quoted
// briefly, never dumped.
func gatewayError(base, status string, code int, body []byte, keySet bool) error {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		msg = e.Error.Message
	}
	if msg == "" {
		msg = strings.Join(strings.Fields(string(body)), " ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg == "" {
			msg = "no message"
		}
		if code == http.StatusNotFound {
			msg += " (is --url a spillway gateway?)"
		}
	}
	switch {
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && keySet:
		msg += "; set SPILLWAY_ADMIN_KEY to the gateway's admin key (the one set now is refused)"
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		msg += "; set SPILLWAY_ADMIN_KEY to the gateway's admin key"
	case !keySet:
		msg += " (SPILLWAY_ADMIN_KEY is not set)"
	}
	return fmt.Errorf("the gateway at %s answered %s: %s", base, status, msg)
}
