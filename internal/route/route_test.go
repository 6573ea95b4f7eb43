package route

import (
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
