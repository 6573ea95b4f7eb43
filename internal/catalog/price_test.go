package catalog

import (
	"math"
	"testing"
)

func TestPriced(t *testing.T) {
	price := &Price{InputPerMTok: 1}
	tests := []struct {
		name string
		d    Deployment
		want bool
	}{
		{"host without price", Deployment{Funding: FundingHost}, false},
		{"empty funding is host", Deployment{}, false},
		{"host with price", Deployment{Funding: FundingHost, Price: price}, true},
		{"host with zero price", Deployment{Funding: FundingHost, Price: &Price{}}, true},
		{"byok without price", Deployment{Funding: FundingBYOK}, true},
		{"byok with price", Deployment{Funding: FundingBYOK, Price: price}, true},
	}
	for _, tc := range tests {
		if got := tc.d.Priced(); got != tc.want {
			t.Errorf("%s: Priced() = %v", tc.name, got)
		}
	}
}

func TestCostMicroUSD(t *testing.T) {
	sonnet := &Price{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75}
	tests := []struct {
		name                         string
		price                        *Price
		input, cached, write, output int
		want                         int64
	}{
		{"no price is not zero price: callers check Priced", nil, 1000, 0, 0, 1000, 0},
		{"nothing used", sonnet, 0, 0, 0, 0, 0},
		{"plain input and output", sonnet, 1000, 0, 0, 500, 3000 + 7500},
		{"rounds up to a whole micro-dollar", &Price{InputPerMTok: 0.1}, 1, 0, 0, 0, 1},
		{"exact despite float: 10 x $0.3", &Price{InputPerMTok: 0.3}, 10, 0, 0, 0, 3},
		{"exact despite float: 3 x $0.1", &Price{OutputPerMTok: 0.1}, 0, 0, 0, 30, 3},
		{"cache reads at their rate", sonnet, 1000, 800, 0, 0, 200*3 + 240},
		{"cache writes at their rate", sonnet, 1000, 0, 1000, 0, 3750},
		{"reads and writes and plain", sonnet, 1000, 500, 300, 10, 200*3 + 150 + 1125 + 150},
		{"unset cache rates are the input rate", &Price{InputPerMTok: 2}, 1000, 600, 300, 0, 2000},
		{"cached beyond input charged in full", sonnet, 100, 1000, 0, 0, 300},
		{"negative counts are zero", sonnet, -5, -1, -1, -9, 0},
		{"zero price", &Price{}, 1000, 0, 0, 1000, 0},
		{"fractional sum rounds once", &Price{InputPerMTok: 0.25, OutputPerMTok: 0.25}, 2, 0, 0, 2, 1},
		{"large request", &Price{InputPerMTok: 15, OutputPerMTok: 75}, 1_000_000, 0, 0, 32_000, 15_000_000 + 2_400_000},
		{"overflow saturates", &Price{InputPerMTok: 1e6}, math.MaxInt, 0, 0, 0, math.MaxInt64},
		{"absurd rate saturates", &Price{InputPerMTok: 1e20}, 1, 0, 0, 0, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Deployment{Price: tc.price}
			if got := d.CostMicroUSD(tc.input, tc.cached, tc.write, tc.output); got != tc.want {
				t.Errorf("CostMicroUSD(%d, %d, %d, %d) = %d, want %d", tc.input, tc.cached, tc.write, tc.output, got, tc.want)
			}
		})
	}
}

func TestOutputCeiling(t *testing.T) {
	tests := []struct {
		name              string
		window, maxOutput int
		maxTokens         int
		want              int
	}{
		{"max_tokens alone", 0, 0, 100, 100},
		{"max_tokens under the cap", 200000, 64000, 1000, 1000},
		{"max_tokens capped by max_output_tokens", 200000, 64000, 100000, 64000},
		{"max_tokens not capped by the window", 1000, 0, 5000, 5000},
		{"no max_tokens: output cap", 200000, 64000, 0, 64000},
		{"no max_tokens, no cap: window", 200000, 0, 0, 200000},
		{"negative max_tokens is none", 200000, 0, -1, 200000},
		{"nothing known: unbounded", 0, 0, 0, 0},
	}
	for _, tc := range tests {
		d := &Deployment{ContextWindow: tc.window, MaxOutputTokens: tc.maxOutput}
		if got := d.OutputCeiling(tc.maxTokens); got != tc.want {
			t.Errorf("%s: OutputCeiling(%d) = %d, want %d", tc.name, tc.maxTokens, got, tc.want)
		}
	}
}
