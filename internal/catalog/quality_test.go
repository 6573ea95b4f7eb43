package catalog

import "testing"

func TestValidatePoolQuality(t *testing.T) {
	const cert = `    equivalence: {by: me, date: "2025-01-02", evidence: "sha256:abc"}` + "\n"
	tests := []struct {
		name  string
		block string
		wants []want
	}{
		{"false alarm zero is the default, negative is refused", "    quality: {false_alarm: -0.1}\n",
			[]want{{17, "pools[0].quality.false_alarm", "not a false-alarm rate"}}},
		{"false alarm too large", "    quality:\n      false_alarm: 0.5\n",
			[]want{{18, "pools[0].quality.false_alarm", "from 0.0001 to 0.2"}}},
		{"horizon too small", "    quality:\n      horizon: 10\n",
			[]want{{18, "pools[0].quality.horizon", "from 100"}}},
		{"shift too large", "    quality:\n      eject: true\n      shift: 0.9\n",
			[]want{{19, "pools[0].quality.shift", "from 0.005 to 0.5"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, edit(t, cert, cert+tc.block)), tc.wants...)
		})
	}
	t.Run("unknown field", func(t *testing.T) {
		ps := parseProblems(t, edit(t, cert, cert+"    quality: {ejcet: true}\n"))
		if len(ps) == 0 || ps[0].Line != 17 {
			t.Fatalf("problems %v, want one at line 17", ps)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		c, err := Parse([]byte(edit(t, cert, cert+"    quality: {eject: true}\n")), "q.yaml")
		if err != nil {
			t.Fatal(err)
		}
		q := c.Pools[0].Quality
		if q != (PoolQuality{FalseAlarm: DefaultQualityFalseAlarm, Horizon: DefaultQualityHorizon, Shift: DefaultQualityShift, Eject: true}) {
			t.Fatalf("quality %+v", q)
		}
	})
}
