package openaichat

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDecodeFlood shows validation grows linearly with a request's
// lists: ns per tool and per tool call stay flat from 16 to 16,384 (the
// caps are applied after decoding, by the server).
func BenchmarkDecodeFlood(b *testing.B) {
	for _, n := range []int{16, 128, 1024, 16384} {
		var tools, calls, results strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				tools.WriteByte(',')
				calls.WriteByte(',')
				results.WriteByte(',')
			}
			tools.WriteString(`{"type":"function","function":{"name":"f` + strconv.Itoa(i) + `"}}`)
			calls.WriteString(`{"id":"c` + strconv.Itoa(i) + `","type":"function","function":{"name":"f0","arguments":"{}"}}`)
			results.WriteString(`{"role":"tool","tool_call_id":"c` + strconv.Itoa(i) + `","content":"r"}`)
		}
		for _, tc := range []struct{ name, body string }{
			{"tools", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tools.String() + `]}`},
			{"calls", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[` + calls.String() + `]},` +
				results.String() + `],"tools":[{"type":"function","function":{"name":"f0"}}]}`},
		} {
			b.Run(tc.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				body := []byte(tc.body)
				d := New()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if _, p := d.Decode(body, nil); p != nil {
						b.Fatal(p)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
			})
		}
	}
}
