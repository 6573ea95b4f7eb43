package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/quality"
	"github.com/spillway-gw/spillway/internal/server"
)

var qualitySubs = []string{"clear"}

// runQuality prints a running gateway's quality signals and divergence
// alerts, or clears a pool secondary's alerts (quality clear).
func runQuality(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "clear" {
		return runQualityClear(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("quality", `usage: spillway quality [--url URL] [--json]
       spillway quality clear --pool P --deployment D [--url URL]

A running gateway's content-free quality signals per deployment (JSON and
schema validity, field population, refusal, empty and truncated answers,
tool calls, answer length) and the divergence alerts raised comparing each
pool secondary with its primary. The figures are the gateway process's own
(one replica). "quality clear" ends a secondary's alerts and, in a pool with
quality.eject, makes it eligible again. Needs SPILLWAY_ADMIN_KEY.`, stderr)
	base := fs.String("url", defaultGatewayURL, "the gateway's base URL (http:// is assumed when no scheme is given)")
	asJSON := fs.Bool("json", false, "print the admin endpoint's JSON as is")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	var raw json.RawMessage
	if err := adminGet(ctx, *base, "/v1/admin/quality", &raw); err != nil {
		return err
	}
	if *asJSON {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := stdout.Write(b.Bytes())
		return err
	}
	var rep quality.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("the answer of %s is not a quality report (%v): is --url the gateway?", *base, err)
	}
	printQuality(stdout, &rep, time.Now())
	return nil
}

func runQualityClear(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("quality clear", `usage: spillway quality clear --pool P --deployment D [--url URL]

Ends the divergence alerts of one secondary of a pool and restarts its tests;
in a pool with quality.eject it becomes eligible again. Needs
SPILLWAY_ADMIN_KEY.`, stderr)
	base := fs.String("url", defaultGatewayURL, "the gateway's base URL (http:// is assumed when no scheme is given)")
	pool := fs.String("pool", "", "the pool id (required)")
	dep := fs.String("deployment", "", "the secondary deployment's id (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *pool == "" || *dep == "" {
		return usageErrorf("--pool and --deployment are both required")
	}
	body, _ := json.Marshal(server.QualityClear{Pool: *pool, Deployment: *dep})
	var out server.QualityClear
	if err := adminPost(ctx, *base, "/v1/admin/quality/clear", body, &out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cleared %d alert(s) of %s in pool %s\n", out.Cleared, out.Deployment, out.Pool)
	return nil
}

// adminPost posts a JSON body to an admin endpoint with
// SPILLWAY_ADMIN_KEY and decodes the answer into v; errors as adminGet's.
func adminPost(ctx context.Context, rawBase, path string, body []byte, v any) error {
	base, err := gatewayURL(rawBase)
	if err != nil {
		return err
	}
	key := os.Getenv("SPILLWAY_ADMIN_KEY")
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return usageErrorf("--url %q: %v", rawBase, err)
	}
	req.Header.Set("Content-Type", "application/json")
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
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("the answer of %s is not what a spillway gateway sends (%v): is --url the gateway?", base, err)
	}
	return nil
}

func printQuality(w io.Writer, rep *quality.Report, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEPLOYMENT\tANSWERS\tJSON VALID\tSCHEMA VALID\tREFUSAL\tEMPTY\tTRUNCATED\tTOOL CALL\tTOOL ARGS VALID\tBYTES P50/P90/P99")
	for _, d := range rep.Deployments {
		cells := []string{d.Deployment, fmt.Sprint(d.Answers)}
		for _, name := range []string{"json_valid", "schema_valid", "refusal", "empty", "truncated", "tool_call", "tool_args_valid"} {
			cells = append(cells, rateCell(d.Signals, name))
		}
		cells = append(cells, fmt.Sprintf("%d/%d/%d", d.LengthBytes.P50, d.LengthBytes.P90, d.LengthBytes.P99))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	fields := false
	for _, d := range rep.Deployments {
		for _, f := range d.Fields {
			if !fields {
				fmt.Fprintln(tw, "\nDEPLOYMENT\tFIELD\tANSWERS\tPOPULATED")
				fields = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\n", d.Deployment, f.Path, f.Answers, 100*f.Rate)
		}
	}
	fmt.Fprintln(tw, "\nPOOL\tPRIMARY\tSECONDARY\tTESTED\tALERTS\tEJECTED\tFALSE ALARM\tHORIZON\tSHIFT\tEJECT")
	for _, p := range rep.Pools {
		for _, s := range p.Secondaries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%g\t%d\t%g\t%v\n", p.Pool, p.Primary, s.Deployment, s.AnswersTested, s.Alerts, s.Ejected,
				p.FalseAlarm, p.Horizon, p.Shift, p.Eject)
		}
	}
	if len(rep.Alerts) == 0 {
		fmt.Fprintln(tw, "\nno divergence alerts")
	} else {
		fmt.Fprintln(tw, "\nALERT POOL\tDEPLOYMENT\tSIGNAL\tFIELD\tDIRECTION\tPRIMARY\tDEPLOYMENT RATE\tAFTER\tSINCE\tEJECTED")
		for _, a := range rep.Alerts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f%%\t%.1f%%\t%d answers\t%s ago\t%v\n", a.Pool, a.Deployment, a.Signal, orDash(a.Field),
				a.Direction, 100*a.PrimaryRate, 100*a.DeploymentRate, a.Answers, now.Sub(a.Since).Round(time.Second), a.Ejected)
		}
	}
	fmt.Fprintf(tw, "\n(figures of this gateway process only: scope %s)\n", rep.Scope)
	_ = tw.Flush()
}

// rateCell is "99.5% of 200", or "-" when the signal applied to nothing.
func rateCell(ss []quality.SignalReport, name string) string {
	for _, s := range ss {
		if s.Signal == name && s.Answers > 0 {
			return fmt.Sprintf("%.1f%% of %d", 100*s.Rate, s.Answers)
		}
	}
	return "-"
}
