package catalog_test

import (
	"fmt"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func ExampleParse() {
	_, err := catalog.Parse([]byte(`deployments:
  - id: anthropic
    provider: anthropic
    base_url: https://api.anthropic.com
    model: claude-sonnet-4-5-20250929
    price: {input_per_mtok: 3, output_per_mtok: 15}
  - id: openrouter
    provider: openai
    base_url: https://openrouter.ai/api
    model: anthropic/claude-sonnet-4.5
    price: {input_per_mtok: 3, output_per_mtok: 15}
pools:
  - id: sonnet
    model: claude-sonnet-4-5
    deployments: [anthropic, openrouter]
routes:
  - model: claude-sonnet-4-5
    pool: sonnet
  - model: claude-opus-4-1
`), "spillway.yaml")
	fmt.Println(err)
	// Output:
	// spillway.yaml:13: pools[0].equivalence: a pool of 2 deployments needs an equivalence certification (by, date, evidence) that they serve the same exact model
	// spillway.yaml:19: routes[1].pool: required: the route names no pool
}

func ExampleBuild() {
	c, err := catalog.Parse([]byte(`deployments:
  - id: openai
    provider: openai
    base_url: https://api.openai.com
    model: gpt-4.1-2025-04-14
    price: {input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5}
    max_output_tokens: 32768
pools:
  - {id: gpt, model: gpt-4.1, deployments: [openai]}
routes:
  - {model: gpt-4.1, pool: gpt}
`), "spillway.yaml")
	if err != nil {
		panic(err)
	}
	s, err := catalog.Build(c, "spillway.yaml")
	if err != nil {
		panic(err)
	}
	r, _ := s.Route("gpt-4.1")
	d := r.Deployments[0]
	fmt.Println(d.ID, d.Timeouts.FirstByte, d.OutputCeiling(0))
	// 10k input tokens of which 8k cached, 500 output tokens:
	// 2000*$2 + 8000*$0.5 + 500*$8 per million = 12000 micro-dollars.
	fmt.Println(d.CostMicroUSD(10000, 8000, 0, 500))
	// Output:
	// openai 15s 32768
	// 12000
}
