package server_test

import (
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/server"
)

// BenchmarkDeadPrimary compares a request whose primary is healthy with one
// whose primary's circuit is open: the open rung must cost nothing (no
// dial, no attempt), so the two should be indistinguishable. Compare the
// ns/op of the two sub-benchmarks.
func BenchmarkDeadPrimary(b *testing.B) {
	body := `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name   string
		open   bool
		served string
	}{{"healthy-primary", false, "primary"}, {"open-primary", true, "secondary"}} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHarness(b, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
			if tc.open {
				h.fault("primary", "status=503")
				for i := 0; i < 2; i++ {
					post(b, h, body)
				}
			}
			before := h.mocks["primary"].Count()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if got := post(b, h, body); got != tc.served {
						b.Errorf("served by %q, want %q", got, tc.served)
						return
					}
				}
			})
			b.StopTimer()
			if tc.open && h.mocks["primary"].Count() != before {
				b.Errorf("the open primary received %d requests", h.mocks["primary"].Count()-before)
			}
		})
	}
}

func post(b *testing.B, h *harness, body string) string {
	resp, err := h.post("/v1/chat/completions", body)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("X-Spillway-Deployment")
}

// BenchmarkLedger compares settled requests per second through the whole
// gateway with the ledger on (reserve, group-committed settlement awaited
// before the last byte) and off, at 128 concurrent clients. Compare the
// req/s metrics of the two sub-benchmarks.
func BenchmarkLedger(b *testing.B) {
	body := `{"model":"` + publicModel + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[on]
		b.Run(name, func(b *testing.B) {
			h := newHarnessOpts(b, nil, func(o *server.Options) {
				if !on {
					o.Ledger = nil
				}
			}, rungSpec{"primary", "openai"})
			b.SetParallelism(128 / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if post(b, h, body) != "primary" {
						b.Error("not served")
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// BenchmarkStream20 is one 20-event OpenAI stream through the whole gateway
// (auth, routing, budgets, ledger), for profiling the streaming hot path.
func BenchmarkStream20(b *testing.B) {
	h := newHarness(b, rungSpec{"primary", "openai"})
	h.fault("primary", "tokens=20")
	body := `{"model":"` + publicModel + `","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if post(b, h, body) != "primary" {
				b.Error("not served")
				return
			}
		}
	})
}
