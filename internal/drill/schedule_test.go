package drill

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/mock"
)

func TestPhases(t *testing.T) {
	for _, n := range []int{1, 7, 14, 3000, 100_000} {
		for _, rungs := range []int{3, 4} {
			ps := Phases(n, rungs)
			at := 0
			for _, p := range ps {
				if p.From != at || p.To < p.From || len(p.Faults) != rungs {
					t.Fatalf("n=%d: phase %q covers [%d,%d) after %d, %d faults", n, p.Name, p.From, p.To, at, len(p.Faults))
				}
				at = p.To
			}
			if at != n {
				t.Fatalf("n=%d: phases end at %d", n, at)
			}
		}
	}
	// The fault menu is all there: the primary fails 38% of its
	// requests in every phase, with 529 or a timeout.
	ps := Phases(3000, 4)
	for _, p := range ps {
		if f := p.Faults[0]; !strings.HasPrefix(f, primaryFailing) && !strings.HasPrefix(f, primaryTimeouts) {
			t.Errorf("phase %q: primary %q", p.Name, f)
		}
	}
	all := ""
	for _, p := range ps {
		all += strings.Join(p.Faults, "|") + "|"
	}
	for _, want := range []string{"status=529", ";stall", "|stall", "status=429;retry_after=", "die_after=", "status=401", "malformed_after=", "cached="} {
		if !strings.Contains(all, want) {
			t.Errorf("no phase has %q", want)
		}
	}
}

// Every script is one every mock kind accepts.
func TestPhaseScriptsValid(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic", "gemini", "bedrock"} {
		m, err := mock.New(kind, mock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range Phases(100, 4) {
			for _, f := range p.Faults {
				if err := m.SetFault(f); err != nil {
					t.Errorf("%s mock refuses %q: %v", kind, f, err)
				}
			}
		}
	}
}

func TestScheduleSeeded(t *testing.T) {
	a, b, c := newSchedule(42), newSchedule(42), newSchedule(43)
	same, counts := true, map[string]int{}
	for range 10_000 {
		x, y, z := a.next(), b.next(), c.next()
		if x != y {
			t.Fatal("one seed, two schedules")
		}
		same = same && x == z
		counts[x.Dialect.String()]++
		if x.Stream {
			counts["stream"]++
		}
		if x.Tools {
			counts["tools"]++
		}
		if x.Idem {
			counts["idem"]++
		}
		if x.Invalid {
			counts["invalid"]++
		}
		if x.Idem && x.Invalid {
			t.Fatal("an idempotent invalid request")
		}
		if x.MaxTokens < 16 {
			t.Fatalf("max tokens %d below the Responses floor", x.MaxTokens)
		}
	}
	if same {
		t.Error("two seeds, one schedule")
	}
	for k, lo := range map[string]int{"openai-chat": 3000, "openai-responses": 3000, "anthropic-messages": 3000, "stream": 4500, "tools": 2000, "idem": 200, "invalid": 50} {
		if counts[k] < lo {
			t.Errorf("%s: %d of 10000", k, counts[k])
		}
	}
}

// The drill's bodies are what each dialect's gateway decoder takes, and an
// invalid one is refused with a 400.
func TestBodiesDecode(t *testing.T) {
	s := newSchedule(7)
	for range 300 {
		sh := s.next()
		if sh.Invalid {
			body := appendBody(nil, testModel, sh)
			if _, pub := gatewayDialect(sh.Dialect).Decode(body, dialectHeader(sh.Dialect)); pub == nil || pub.Status != 400 {
				t.Errorf("%s takes the invalid body %s", sh.Dialect, body)
			}
			continue
		}
		req := decodeShape(t, sh)
		if req.Model != testModel || req.Stream != sh.Stream || req.MaxTokens != sh.MaxTokens || (len(req.Tools) > 0) != sh.Tools {
			t.Errorf("%+v decoded as model %q stream %v max %d tools %d", sh, req.Model, req.Stream, req.MaxTokens, len(req.Tools))
		}
	}
}
