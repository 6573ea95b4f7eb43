package loadgen

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
)

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("27689 (cat) R 27687 27687 23883 0 -1 4194304 97 0 0 0 7 3 0 0 20 0 1 0 659088"))
	f.Add([]byte("5 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 1234 56 0 0 20 0 9"))
	f.Add([]byte("1 ()) ) 1 2 3 4 5 6 7 8 9 10 11 12 13"))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, s, err := parseStat(b)
		if err != nil {
			if u != 0 || s != 0 {
				t.Fatalf("values %d, %d with error %v", u, s, err)
			}
			return
		}
		// What was parsed is what is written after the last ')'.
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if strconv.FormatUint(u, 10) != string(bytes.TrimLeft(f[11], "0")) && u != 0 {
			t.Fatalf("utime %d from %q", u, f[11])
		}
	})
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("Name:\tcat\nVmHWM:\t    1956 kB\nVmRSS:\t    1900 kB\n"))
	f.Add([]byte("VmRSS:\t7 kB"))
	f.Add([]byte("VmRSS:\t-7 kB\nVmHWM: x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rss, hwm, err := parseStatus(b)
		if err != nil {
			return
		}
		if rss < 0 || hwm < 0 || rss%1024 != 0 || hwm%1024 != 0 {
			t.Fatalf("rss %d hwm %d", rss, hwm)
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3", "1,0", "0-2,1,5", "3-1", "", "1023", "0-1023"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatal("no CPUs and no error")
		}
		seen := map[int]bool{}
		for _, c := range cpus {
			if c < 0 || c > maxCPU || seen[c] {
				t.Fatalf("ParseCPUList(%q) = %v", s, cpus)
			}
			seen[c] = true
		}
	})
}

// The kept tail decides completeness exactly as the whole answer would.
func FuzzTail(f *testing.F) {
	f.Add([]byte("data: {}\n\ndata: [DONE]\n\n"), uint8(3))
	f.Add(bytes.Repeat([]byte("x"), 600), uint8(200))
	f.Fuzz(func(t *testing.T, body []byte, step uint8) {
		term := []byte("data: [DONE]")
		var w worker
		n := max(int(step), 1)
		for c := range slices.Chunk(body, n) {
			w.keep(c)
		}
		trimmed := bytes.TrimRight(body, " \t\r\n")
		want := bytes.HasSuffix(trimmed, term)
		// Trailing whitespace longer than the tail hides the terminator:
		// answers never end that way, so only the short case must agree.
		if len(body)-len(trimmed) <= tailLen-len(term) && w.complete(term) != want {
			t.Fatalf("complete = %v, want %v for %q in steps of %d", !want, want, body, n)
		}
	})
}
