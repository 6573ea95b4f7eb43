package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/server"
)

func TestPrintHealth(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	retry := now.Add(25 * time.Second)
	rep := &server.HealthReport{
		Deployments: []health.Status{
			{Deployment: "primary", State: health.Open, Reason: "consecutive failures", Since: now.Add(-5 * time.Second),
				RetryAt: &retry, Attempts: 7, Successes: 5, Failures: map[string]int64{"provider_unavailable": 2}, ErrorRate: 2.0 / 7, P95Millis: 120},
			{Deployment: "secondary", State: health.Healthy, Since: now.Add(-time.Hour), Attempts: 3, Successes: 3},
		},
		Routes: []server.RouteHealth{{Model: "m", Pool: "p", ExactModel: "m-exact", Rungs: 2, HealthyRungs: 1}},
	}
	var b bytes.Buffer
	printHealth(&b, rep, now)
	out := b.String()
	for _, want := range []string{"primary", "open", "consecutive failures", "5s ago", "25s", "28.6%", "120ms", "secondary", "healthy", "m-exact", "1/2"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunHealth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/admin/health" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"deployments":[{"deployment":"d1","state":"suppressed","reason":"provider_authentication","since":"2026-11-29T12:00:00Z","failures":{}}],"routes":[]}`))
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	t.Setenv("SPILLWAY_ADMIN_KEY", "")
	if err := runHealth(context.Background(), []string{"--url", srv.URL}, &out, &errb); err == nil {
		t.Error("no admin key: want an error")
	}
	t.Setenv("SPILLWAY_ADMIN_KEY", "wrong")
	if err := runHealth(context.Background(), []string{"--url", srv.URL}, &out, &errb); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong key: err = %v", err)
	}
	t.Setenv("SPILLWAY_ADMIN_KEY", "k")
	if err := runHealth(context.Background(), []string{"--url", srv.URL}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "suppressed") || !strings.Contains(out.String(), "provider_authentication") {
		t.Errorf("output:\n%s", out.String())
	}
}
