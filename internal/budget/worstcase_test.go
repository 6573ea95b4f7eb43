package budget

import (
	"math"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func TestWorstCaseMicro(t *testing.T) {
	sonnet := &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75}
	tests := []struct {
		name          string
		price         *catalog.Price
		input, output int
		want          int64
		ok            bool
	}{
		{"no price is not zero: unpriced", nil, 1000, 1000, 0, false},
		{"no output ceiling: unbounded", sonnet, 1000, 0, 0, false},
		{"negative output ceiling: unbounded", sonnet, 1000, -1, 0, false},
		{"cache writes dearer than input: input as writes", sonnet, 1000, 500, 3750 + 7500, true},
		{"no cache rates: plain input", &catalog.Price{InputPerMTok: 2, OutputPerMTok: 8}, 1000, 500, 2000 + 4000, true},
		{"cache reads dearer (odd, still the worst)", &catalog.Price{InputPerMTok: 1, CachedInputPerMTok: 4, CacheWritePerMTok: 2}, 1000, 1, 4000, true},
		{"negative input is none", sonnet, -5, 1000, 15000, true},
		{"rounds up", &catalog.Price{OutputPerMTok: 0.1}, 0, 1, 1, true},
		{"zero price is priced", &catalog.Price{}, 1000, 1000, 0, true},
		{"saturates", &catalog.Price{OutputPerMTok: 1e6}, 0, math.MaxInt, math.MaxInt64, true},
		{"opus at a 32k ceiling", &catalog.Price{InputPerMTok: 15, OutputPerMTok: 75}, 200_000, 32_000, 3_000_000 + 2_400_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := WorstCaseMicro(tt.price, tt.input, tt.output)
			if got != tt.want || ok != tt.ok {
				t.Errorf("WorstCaseMicro(%d, %d) = %d, %v; want %d, %v", tt.input, tt.output, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The worst case bounds every way the same tokens can be billed.
func TestWorstCaseBoundsActualCost(t *testing.T) {
	prices := []*catalog.Price{
		{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75},
		{InputPerMTok: 0.15, OutputPerMTok: 0.6},
		{InputPerMTok: 1.1, OutputPerMTok: 4.4, CachedInputPerMTok: 0.275},
	}
	for _, p := range prices {
		d := catalog.Deployment{Price: p}
		for _, in := range []int{0, 1, 7, 999, 123_457} {
			worst, _ := WorstCaseMicro(p, in, 4096)
			for _, split := range [][2]int{{0, 0}, {in, 0}, {0, in}, {in / 2, in / 3}} {
				for _, out := range []int{0, 1, 4096} {
					if c := d.CostMicroUSD(in, split[0], split[1], out); c > worst {
						t.Errorf("%+v: cost(%d, %v, %d) = %d above the worst case %d", *p, in, split, out, c, worst)
					}
				}
			}
		}
	}
}

func TestEstimateInputTokens(t *testing.T) {
	for bytes, want := range map[int]int{-4: 0, 0: 0, 1: 1, 3: 1, 4: 1, 5: 2, 8: 2, 4001: 1001} {
		if got := EstimateInputTokens(bytes); got != want {
			t.Errorf("EstimateInputTokens(%d) = %d, want %d", bytes, got, want)
		}
	}
}
