package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sdkOp is one operation a client SDK makes, and the test that drives it
// through the gateway unchanged.
type sdkOp struct{ op, test string }

// goSDKs are the Go SDKs, by module path, with what the suites prove.
var goSDKs = []struct {
	module string
	ops    []sdkOp
}{
	{"github.com/openai/openai-go/v3", []sdkOp{
		{"chat completions, plain and streamed, with the accumulator", "TestCompatibilityMatrix (openai-chat)"},
		{"multi-turn by `Message.ToParam()`, tool loops", "TestChatToolCallsSurviveFailover, TestEchoedFieldTable"},
		{"responses, plain and streamed", "TestCompatibilityMatrix (openai-responses)"},
		{"reasoning: `reasoning_effort`, `reasoning` items", "TestConformanceThinking"},
		{"models list and retrieve", "TestModelsListAndRetrieve"},
		{"`responses.input_tokens` count", "TestConformanceCountTokens"},
		{"embeddings", "TestConformanceEmbeddings"},
		{"errors as `*openai.Error` with status and code", "TestChatBadInput, TestBudgetRefusals, TestPathsAnswerJSONInTheirDialect"},
	}},
	{"github.com/anthropics/anthropic-sdk-go/v2", []sdkOp{
		{"messages, plain and streamed (`anthropic-version: 2026-10-21`, bearer key)", "TestCompatibilityMatrix (anthropic-messages)"},
		{"multi-turn by `Message.ToParam()`", "TestSDKToolLoop"},
		{"extended thinking, plain, streamed and between tool calls", "TestConformanceThinking"},
		{"count_tokens", "TestConformanceCountTokens"},
		{"errors as `*anthropic.Error`", "TestConformanceCountTokens"},
	}},
}

// nodeOps are what the Node suite (clients/node/test) proves per package.
var nodeOps = map[string][]string{
	"openai": {"chat completions plain and streamed on every provider", "multi-turn by pushing the returned message",
		"tool loops by hand and with `runTools` (plain and streamed)", "`chat.completions.stream` helper", "`chat.completions.parse` with zod",
		"responses create, multi-turn by `input.push(...output)`, function-tool loop, `responses.stream`, `responses.parse`",
		"models list and retrieve", "embeddings (float and base64)", "errors by class and code: unknown model, bad key, budget refusal, 413, mid-stream interrupt, failover trail"},
	"@anthropic-ai/sdk": {"messages plain and streamed on every provider", "multi-turn by pushing `content`", "tool loops by hand and with `beta.messages.toolRunner` (thread refused, SDK falls back)",
		"`messages.stream` helper", "`messages.parse` with zod", "count_tokens", "extended thinking (budget and adaptive)", "models list and retrieve",
		"errors by class: unknown model, bad key, budget refusal, 413, mid-stream interrupt, failover trail"},
	"@langchain/openai":    {"invoke, stream with usage, `bindTools` loop, `withStructuredOutput`, Responses mode"},
	"@langchain/anthropic": {"invoke, stream, `bindTools` loop, `withStructuredOutput`, conversations continued across providers"},
}

// renderSDKs writes the section naming every client SDK the suites run,
// at the version they ran: the Go modules go.mod requires, and the Node
// packages clients/node pins.
func renderSDKs(t *testing.T) string {
	var b strings.Builder
	b.WriteString("## Client SDKs\n\n")
	b.WriteString("The client conformance suites drive the gateway with these SDKs, unchanged, through the patterns users write.\n")
	b.WriteString("`clients/node/bump.sh` moves every one of them to its newest release and reruns the suites.\n\n")
	versions := map[string]string{}
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			versions[f[0]] = f[1]
		}
	}
	for _, s := range goSDKs {
		v := versions[s.module]
		if v == "" {
			t.Errorf("go.mod does not require %s", s.module)
		}
		fmt.Fprintf(&b, "### Go: `%s` %s\n\n| operation | proven by |\n|---|---|\n", s.module, v)
		for _, op := range s.ops {
			fmt.Fprintf(&b, "| %s | %s |\n", op.op, op.test)
		}
		b.WriteString("\n")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "clients", "node", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"openai", "@anthropic-ai/sdk", "@langchain/openai", "@langchain/anthropic"} {
		fmt.Fprintf(&b, "### Node: `%s` %s\n\n", name, pkg.Dependencies[name])
		for _, op := range nodeOps[name] {
			fmt.Fprintf(&b, "- %s\n", op)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "LangChain runs on `@langchain/core` %s. The Node suite is `TestNodeClients` (`clients/node/test/*.test.mjs`).\n", pkg.Dependencies["@langchain/core"])
	return b.String()
}
