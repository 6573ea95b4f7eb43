package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// TestUsageOverPrunedDays: after the retention pruned a day's request
// rows, GET /v1/usage over whole days answers exactly as before (from the
// daily aggregates, every field), and a from that is not a midnight
// inside the pruned range is a 400 that says from when rows are kept.
func TestUsageOverPrunedDays(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	ctx := context.Background()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	old, recent := today.AddDate(0, 0, -20), today.AddDate(0, 0, -2)
	var sets []ledger.Settlement
	for i, at := range []time.Time{old.Add(3 * time.Hour), old.Add(15 * time.Hour), recent.Add(9 * time.Hour)} {
		sets = append(sets, ledger.Settlement{Request: ledger.Request{RequestID: fmt.Sprintf("old-%d", i),
			Org: "acme", Team: "search", KeyID: h.keyRec.ID, PublicModel: publicModel, ExactModel: exactModel,
			Deployment: "primary", Attempts: 1, Status: ledger.StatusOK, InputTokens: 100, OutputTokens: 10 * (i + 1),
			CostMicroUSD: int64(1000 * (i + 1)), CostStatus: ledger.CostPriced, StartedAt: at, FinishedAt: at.Add(time.Second)}})
	}
	if err := h.store.WriteBatch(ctx, &ledger.Batch{Settlements: sets}); err != nil {
		t.Fatal(err)
	}
	wholeDays := "/v1/usage?group_by=day&from=" + old.Format(time.DateOnly) + "&to=" + today.Format(time.DateOnly)
	partial := "/v1/usage?from=" + old.Add(12*time.Hour).Format(time.RFC3339) + "&to=" + today.Format(time.DateOnly)
	get := func(path string) (int, string) { return adminGet(t, h, path, adminKey) }
	status, before := get(wholeDays)
	if status != http.StatusOK {
		t.Fatalf("before pruning: %d %s", status, before)
	}
	if status, body := get(partial); status != http.StatusOK || !strings.Contains(body, `"requests": 2`) {
		t.Fatalf("partial day before pruning: %d %s, want 2 requests", status, body)
	}
	for {
		n, err := h.store.Prune(ctx, today.AddDate(0, 0, -10), 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	status, after := get(wholeDays)
	if status != http.StatusOK {
		t.Fatalf("after pruning: %d %s", status, after)
	}
	var b, a struct{ Rows []ledger.UsageRow }
	json.Unmarshal([]byte(before), &b)
	json.Unmarshal([]byte(after), &a)
	if len(b.Rows) != 2 || fmt.Sprint(a.Rows) != fmt.Sprint(b.Rows) {
		t.Errorf("whole days after pruning:\n got %+v\nwant %+v", a.Rows, b.Rows)
	}
	status, body := get(partial)
	if status != http.StatusBadRequest || !strings.Contains(body, "pruned") ||
		!strings.Contains(body, today.AddDate(0, 0, -10).Format(time.DateOnly)) {
		t.Errorf("a partial pruned day: %d %s, want 400 naming the first day kept", status, body)
	}
}
