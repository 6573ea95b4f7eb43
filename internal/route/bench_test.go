package route

import (
	"sync/atomic"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

// benchPool is a pool of three deployments of one exact model, as the
// gateway's selection sees it per request, with filters shaped like the
// server's: a runtime lookup (eligible), Priced, an adapter capability
// check (capable) and a health gate reading an atomic per deployment.
func benchPool(unpricedPrimary bool) (*catalog.ResolvedRoute, []Filter) {
	price := &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15}
	ds := []*catalog.Deployment{
		{ID: "anthropic-direct", Provider: "anthropic", Model: "claude-sonnet-4-5", Funding: catalog.FundingHost, Price: price, MaxOutputTokens: 64000, ContextWindow: 200000},
		{ID: "bedrock-us", Provider: "bedrock", Model: "us.anthropic.claude-sonnet-4-5-v1:0", Funding: catalog.FundingHost, Price: price, MaxOutputTokens: 64000, ContextWindow: 200000},
		{ID: "vertex-eu", Provider: "anthropic", Model: "claude-sonnet-4-5@20250929", Funding: catalog.FundingHost, Price: price, MaxOutputTokens: 64000, ContextWindow: 200000},
	}
	if unpricedPrimary {
		ds[0].Price = nil
	}
	rr := &catalog.ResolvedRoute{Public: "claude-sonnet-4-5", Pool: &catalog.Pool{ID: "sonnet"}, Deployments: ds}
	missing := map[string]string{} // deployment id -> why its runtime is missing
	healthy := map[string]*atomic.Bool{}
	for _, d := range ds {
		healthy[d.ID] = new(atomic.Bool)
		healthy[d.ID].Store(true)
	}
	eligible := func(d *catalog.Deployment, _ *canonical.Request) (string, string) {
		if why := missing[d.ID]; why != "" {
			return ReasonCredentialMissing, why
		}
		return "", ""
	}
	capable := func(d *catalog.Deployment, req *canonical.Request) (string, string) {
		if d.Provider == "bedrock" && req.ResponseFormat != nil {
			return ReasonUnsupported, "response_format"
		}
		return "", ""
	}
	health := func(d *catalog.Deployment, _ *canonical.Request) (string, string) {
		if !healthy[d.ID].Load() {
			return "circuit_open", ""
		}
		return "", ""
	}
	return rr, []Filter{eligible, Priced, capable, health}
}

func BenchmarkSelect(b *testing.B) {
	req := &canonical.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024, Stream: true}
	for _, tc := range []struct {
		name     string
		unpriced bool
		kept     int
	}{{"all kept", false, 3}, {"unpriced primary dropped", true, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			rr, filters := benchPool(tc.unpriced)
			b.ReportAllocs()
			for b.Loop() {
				s := Select(rr, req, filters...)
				if len(s.Kept()) != tc.kept {
					b.Fatal("wrong selection")
				}
			}
		})
	}
}
