package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const qualityJSON = `{"scope":"replica","deployments":[{"deployment":"secondary","answers":120,
 "signals":[{"signal":"json_valid","answers":100,"events":99,"rate":0.99},{"signal":"refusal","answers":120,"events":0,"rate":0}],
 "fields":[{"path":"coverage.effective_date","answers":99,"populated":96,"rate":0.9697}],"fields_dropped":0,"unmeasured":0,
 "finish_reasons":[{"reason":"end","answers":120,"rate":1}],"length_bytes":{"p50":383,"p90":511,"p99":767}}],
 "pools":[{"pool":"pool","primary":"primary","false_alarm":0.01,"horizon":5000,"shift":0.03,"eject":true,
  "secondaries":[{"deployment":"secondary","answers_tested":120,"alerts":1,"ejected":true}]}],
 "alerts":[{"pool":"pool","deployment":"secondary","primary":"primary","signal":"field_populated","field":"coverage.effective_date",
  "direction":"lower","primary_rate":1,"deployment_rate":0.9697,"answers":99,"since":"2026-11-29T12:00:00Z","ejected":true}]}`

func TestRunQuality(t *testing.T) {
	var cleared []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/admin/quality":
			_, _ = io.WriteString(w, qualityJSON)
		case "POST /v1/admin/quality/clear":
			b, _ := io.ReadAll(r.Body)
			var req struct{ Pool, Deployment string }
			_ = json.Unmarshal(b, &req)
			if req.Deployment != "secondary" {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"error":{"message":"no pool of that id has that deployment as a secondary","code":"quality_pair_not_found"}}`)
				return
			}
			cleared = append(cleared, req.Pool+"/"+req.Deployment)
			_, _ = io.WriteString(w, `{"pool":"pool","deployment":"secondary","cleared":1}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	t.Setenv("SPILLWAY_ADMIN_KEY", "wrong")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"quality", "--url", srv.URL}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "401") {
		t.Errorf("wrong key: exit %d, %s", code, errb.String())
	}
	t.Setenv("SPILLWAY_ADMIN_KEY", "k")
	out.Reset()
	if code := run(ctx, []string{"quality", "--url", srv.URL}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"secondary", "99.0% of 100", "383/511/767", "coverage.effective_date", "97.0%", "field_populated", "lower", "100.0%", "scope replica"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(ctx, []string{"quality", "--json", "--url", srv.URL}, &out, &errb); code != 0 || !json.Valid(out.Bytes()) || !strings.Contains(out.String(), `"answers_tested": 120`) {
		t.Errorf("--json: exit %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(ctx, []string{"quality", "clear", "--pool", "pool", "--deployment", "secondary", "--url", srv.URL}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "cleared 1 alert(s) of secondary in pool pool") || len(cleared) != 1 {
		t.Errorf("clear: exit %d: %s %s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := run(ctx, []string{"quality", "clear", "--pool", "pool", "--deployment", "primary", "--url", srv.URL}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "as a secondary") {
		t.Errorf("clear the primary: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run(ctx, []string{"quality", "clear", "--pool", "pool", "--url", srv.URL}, &out, &errb); code != 2 {
		t.Errorf("clear without --deployment: exit %d: %s", code, errb.String())
	}
	for _, args := range [][]string{{"quality", "--help"}, {"quality", "clear", "--help"}, {"help", "quality"}} {
		out.Reset()
		if code := run(ctx, args, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: spillway quality") {
			t.Errorf("%v: exit %d: %s", args, code, out.String())
		}
	}
}
