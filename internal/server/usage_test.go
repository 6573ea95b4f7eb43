package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/server"
)

// outageStore is a ledger store that can stop answering, as a PostgreSQL
// ledger does while the database is down: writes fail (the journal keeps
// the rows) and so do queries. usageErr, when set, fails Usage alone.
type outageStore struct {
	ledger.Store
	down     atomic.Bool
	usageErr atomic.Pointer[error]
}

var errStoreDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (s *outageStore) WriteBatch(ctx context.Context, b *ledger.Batch) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.Store.WriteBatch(ctx, b)
}

func (s *outageStore) Usage(ctx context.Context, q ledger.UsageQuery) ([]ledger.UsageRow, error) {
	if s.down.Load() {
		return nil, errStoreDown
	}
	if e := s.usageErr.Load(); e != nil {
		return nil, *e
	}
	return s.Store.Usage(ctx, q)
}

// GET /v1/usage while the ledger's store is down answers at once with 503
// ledger_unavailable in the admin error shape, with Retry-After: it never
// waits for the caller to give up, and it is never a 400 or a report that
// lacks the requests still in the journal. Once the store is back the
// report has them; a query the store finds invalid is still a 400.
func TestUsageDuringLedgerOutage(t *testing.T) {
	st := &outageStore{}
	h := newHarnessOpts(t, nil, func(o *server.Options) {
		st.Store = o.Store
		j, err := ledger.OpenJournal(filepath.Join(t.TempDir(), "outage.journal"))
		if err != nil {
			t.Fatal(err)
		}
		w := ledger.NewWriter(st, ledger.WriterOptions{Journal: j, MinFreeBytes: -1})
		t.Cleanup(func() {
			st.down.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = w.Close(ctx)
		})
		o.Ledger, o.Store, o.UsageWait = w, st, 200*time.Millisecond
	}, rungSpec{"primary", "openai"})
	usage := func(query string) (int, http.Header, map[string]any, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/v1/usage"+query, nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("usage answered %d, not JSON: %s", resp.StatusCode, b)
		}
		return resp.StatusCode, resp.Header, body, time.Since(start)
	}
	code := func(body map[string]any) string {
		e, _ := body["error"].(map[string]any)
		c, _ := e["code"].(string)
		return c
	}

	st.down.Store(true)
	resp, err := h.post("/v1/chat/completions", `{"model":"`+publicModel+`","messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a request with the store down (its row in the journal): %d %s", resp.StatusCode, b)
	}
	for _, query := range []string{"", "?group_by=model"} {
		status, hdr, body, took := usage(query)
		if status != http.StatusServiceUnavailable || code(body) != "ledger_unavailable" || hdr.Get("Retry-After") != "5" {
			t.Errorf("usage%s with the store down: %d %v Retry-After %q; want 503 ledger_unavailable, Retry-After 5", query, status, body, hdr.Get("Retry-After"))
		}
		if took > 3*time.Second {
			t.Errorf("usage%s with the store down took %s; want about UsageWait (200ms)", query, took)
		}
	}

	// Back: the report has the request the journal held.
	st.down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, body, _ := usage("")
		if status == http.StatusOK {
			rows, _ := body["rows"].([]any)
			if len(rows) != 1 || fmt.Sprint(rows[0].(map[string]any)["requests"]) != "1" {
				t.Errorf("usage once the store is back: %v; want the one request", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage still %d %v 10s after the store came back", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"query refused by the store", fmt.Errorf("ledger/postgres: %w: group_by", ledger.ErrInvalidQuery), http.StatusBadRequest, "invalid_request"},
		{"query failing", errors.New("ledger/postgres: usage: conn closed"), http.StatusServiceUnavailable, "ledger_unavailable"},
	} {
		st.usageErr.Store(&tc.err)
		status, _, body, _ := usage("")
		if status != tc.status || (tc.status == http.StatusServiceUnavailable && code(body) != tc.code) {
			t.Errorf("%s: %d %v; want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
}
