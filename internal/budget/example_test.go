package budget_test

import (
	"fmt"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// One customer request: reserve the worst case once, settle what the
// serving rung cost. A second request that no longer fits is refused with
// the specific reason and never reaches a provider.
func Example() {
	credit := int64(100_000) // $0.10
	a := budget.New(nil)
	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: &credit}})
	scopes := []budget.Scope{{Kind: ledger.ScopeOrg, ID: "acme"}, {Kind: ledger.ScopeKey, ID: "key_1"}}

	price := &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15}
	input := budget.EstimateInputTokens(4_000) // a 4 KB request body
	worst, _ := budget.WorstCaseMicro(price, input, 4_096)
	fmt.Println("worst case:", worst)

	hold, refusal := a.Reserve(scopes, worst, input+4_096)
	if refusal != nil {
		fmt.Println(refusal.Code)
		return
	}
	hold.Settle(3_000+15*250, input+250) // the serving rung's usage: 1000 in, 250 out

	if _, refusal := a.Reserve(scopes, 95_000, 0); refusal != nil {
		fmt.Println(refusal.Public().Status, refusal.Code)
	}
	// Output:
	// worst case: 64440
	// 429 key_budget_exceeded
}
