package route

import (
	"slices"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

func TestPriced(t *testing.T) {
	price := &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15}
	tests := []struct {
		name       string
		d          catalog.Deployment
		maxTokens  int
		wantReason string
	}{
		{"bring your own key needs no price", catalog.Deployment{Funding: catalog.FundingBYOK}, 0, ""},
		{"host-funded without a price is dropped, never $0", catalog.Deployment{Funding: catalog.FundingHost, MaxOutputTokens: 100}, 100, ReasonPriceUnknown},
		{"priced but nothing bounds the output", catalog.Deployment{Funding: catalog.FundingHost, Price: price}, 0, ReasonPriceUnknown},
		{"the caller's max_tokens bounds it", catalog.Deployment{Funding: catalog.FundingHost, Price: price}, 512, ""},
		{"the deployment's output cap bounds it", catalog.Deployment{Funding: catalog.FundingHost, Price: price, MaxOutputTokens: 8192}, 0, ""},
		{"the context window bounds it", catalog.Deployment{Funding: catalog.FundingHost, Price: price, ContextWindow: 200000}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, detail := Priced(&tt.d, &canonical.Request{MaxTokens: tt.maxTokens})
			if reason != tt.wantReason {
				t.Fatalf("reason %q (%s), want %q", reason, detail, tt.wantReason)
			}
			if (reason == "") != (detail == "") {
				t.Errorf("reason %q with detail %q: a drop explains itself, a keep says nothing", reason, detail)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	ds := []*catalog.Deployment{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	rr := &catalog.ResolvedRoute{Public: "m", Pool: &catalog.Pool{ID: "p"}, Deployments: ds}
	drop := func(id, reason string) Filter {
		return func(d *catalog.Deployment, _ *canonical.Request) (string, string) {
			if d.ID == id {
				return reason, "because " + reason
			}
			return "", ""
		}
	}
	calls := 0
	counting := func(*catalog.Deployment, *canonical.Request) (string, string) { calls++; return "", "" }
	tests := []struct {
		name     string
		filters  []Filter
		wantKept []string
		// reasons per deployment, in pool order ("" = kept)
		wantReasons []string
	}{
		{"no filter keeps the pool in order", nil, []string{"a", "b", "c"}, []string{"", "", ""}},
		{"a dropped rung keeps its place and its reason", []Filter{drop("b", ReasonCredentialMissing)}, []string{"a", "c"}, []string{"", ReasonCredentialMissing, ""}},
		{"the first filter to drop gives the reason", []Filter{drop("a", ReasonPriceUnknown), drop("a", ReasonUnsupported)}, []string{"b", "c"}, []string{ReasonPriceUnknown, "", ""}},
		{"every rung dropped", []Filter{drop("a", "x"), drop("b", "y"), drop("c", "z")}, []string{}, []string{"x", "y", "z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Select(rr, &canonical.Request{}, tt.filters...)
			if s.Route != rr || len(s.Candidates) != len(ds) {
				t.Fatalf("selection of %d candidates for route %v", len(s.Candidates), s.Route)
			}
			var reasons []string
			for i, c := range s.Candidates {
				if c.Deployment != ds[i] {
					t.Errorf("candidate %d is %s, want pool order", i, c.Deployment.ID)
				}
				if c.Kept != (c.Reason == "") || (c.Reason != "" && c.Detail == "") {
					t.Errorf("candidate %s: kept %v, reason %q, detail %q", c.Deployment.ID, c.Kept, c.Reason, c.Detail)
				}
				reasons = append(reasons, c.Reason)
			}
			if !slices.Equal(reasons, tt.wantReasons) {
				t.Errorf("reasons %q, want %q", reasons, tt.wantReasons)
			}
			kept := []string{}
			for _, d := range s.Kept() {
				kept = append(kept, d.ID)
			}
			if !slices.Equal(kept, tt.wantKept) {
				t.Errorf("kept %v, want %v", kept, tt.wantKept)
			}
		})
	}
	// A dropped rung is not asked again by later filters.
	Select(rr, &canonical.Request{}, drop("a", "x"), counting)
	if calls != 2 {
		t.Errorf("the filter after a drop ran %d times, want 2 (b and c)", calls)
	}
}
