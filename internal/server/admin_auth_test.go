package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/server"
)

// The admin credential lives in the ledger (hashed) and rotates: the new
// key works, the old one stops once the gateway refreshes; without any
// admin credential the admin API says how to get one.
func TestAdminKeyFromTheLedger(t *testing.T) {
	var admin *keys.AdminAuth
	h := newHarnessOpts(t, nil, func(o *server.Options) {
		o.AdminKey = ""
		admin = keys.NewAdminAuth(o.Store, "")
		o.Admin = admin
	}, rungSpec{"primary", "openai"})
	get := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/v1/admin/keys", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("anything"); code != 404 || !strings.Contains(body, "admin_disabled") || !strings.Contains(body, "spillway admin rotate") {
		t.Errorf("no admin key anywhere: %d %s", code, body)
	}
	ctx := context.Background()
	first, _, err := keys.NewAdmin(ctx, h.store, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(first); code != 200 {
		t.Errorf("the ledger's admin key: %d", code)
	}
	if code, body := get(h.key); code != 401 || !strings.Contains(body, "invalid_admin_key") {
		t.Errorf("a virtual key on the admin API: %d %s", code, body)
	}
	second, _, err := keys.NewAdmin(ctx, h.store, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(first); code != 401 {
		t.Errorf("the rotated-out admin key still works: %d", code)
	}
	if code, _ := get(second); code != 200 {
		t.Errorf("the new admin key: %d", code)
	}
}

// /v1/usage without parameters: from the UTC midnight 30 days ago up to
// now (whole days: pruning never refuses the default), group_by an
// empty list, rows an empty list: no zero times, no nulls.
func TestUsageDefaults(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/v1/usage", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	var from, to time.Time
	json.Unmarshal(got["from"], &from)
	json.Unmarshal(got["to"], &to)
	if d := to.Sub(from); d < 30*24*time.Hour || d >= 31*24*time.Hour || !from.Equal(from.UTC().Truncate(24*time.Hour)) ||
		time.Since(to) > time.Minute {
		t.Errorf("from %s to %s: want from the UTC midnight 30 days ago up to now", got["from"], got["to"])
	}
	if string(got["group_by"]) != "[]" || string(got["rows"]) == "null" {
		t.Errorf("group_by %s rows %s: want lists", got["group_by"], got["rows"])
	}
}
