package replica

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeServe writes a stand-in for the spillway binary: a shell script
// that prints what serve prints and then runs body.
func fakeServe(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "spillway")
	script := "#!/bin/sh\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestStartStopKill(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, body, wantErr string
	}{
		{"exits before listening", `echo "spillway serve: config: bad"; exit 1`, "exited before listening"},
		{"listens", `trap 'exit 0' TERM; echo "no virtual keys yet"; echo "spillway listening on http://127.0.0.1:4321 (config c, ledger l)"; while :; do sleep 0.05; done`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(ctx, Options{Bin: fakeServe(t, tc.body), Config: "c.yaml", DataDir: t.TempDir()})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "config: bad") {
					t.Fatalf("Start = %v, want %q with its output", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Addr != "127.0.0.1:4321" || p.URL != "http://127.0.0.1:4321" || !strings.Contains(p.Output(), "no virtual keys yet") {
				t.Errorf("addr %q url %q output %q", p.Addr, p.URL, p.Output())
			}
			if err := p.Stop(5 * time.Second); err != nil || !p.Exited() {
				t.Errorf("Stop = %v, exited %v", err, p.Exited())
			}
		})
	}
	// A replica that ignores SIGTERM is killed after the grace.
	p, err := Start(ctx, Options{Bin: fakeServe(t, `trap '' TERM; echo "spillway listening on http://127.0.0.1:1"; while :; do sleep 0.05; done`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") || !p.Exited() {
		t.Errorf("Stop of a replica ignoring SIGTERM = %v, exited %v", err, p.Exited())
	}
	p, err = Start(ctx, Options{Bin: fakeServe(t, `echo "spillway listening on http://127.0.0.1:2"; while :; do sleep 0.05; done`)})
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if !p.Exited() {
		t.Error("alive after Kill")
	}
}
