package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/server"
)

// The hand-written access line carries the slog record's fields, as JSON.
func TestAccessLogLine(t *testing.T) {
	var lines syncBuffer
	h := newHarnessOpts(t, nil, func(o *server.Options) { o.AccessLog = &lines }, rungSpec{"primary", "openai"})
	r := chat(t, h, false, hello())
	if r.err != nil {
		t.Fatal(r.err)
	}
	out := strings.TrimSpace(lines.String())
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("not one JSON line: %v\n%s", err, out)
	}
	want := map[string]any{"level": "INFO", "msg": "request", "request_id": reqID(r), "dialect": "openai-chat",
		"key": h.keyRec.ID, "model": publicModel, "deployment": "primary", "status": 200.0, "outcome": "ok", "cost_status": "priced"}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	if c, _ := rec["cost_micro_usd"].(float64); c <= 0 {
		t.Errorf("cost_micro_usd = %v", rec["cost_micro_usd"])
	}
	if _, ok := rec["time"].(string); !ok {
		t.Error("no time")
	}
}
