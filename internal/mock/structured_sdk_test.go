package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"
)

// Structured output through the official SDKs: what each SDK parses out of
// the mock's answer fills the caller's struct.

// soPerson is the Go side of zodV4Schema.
type soPerson struct {
	Name      string    `json:"name"`
	Age       *float64  `json:"age"`
	Nickname  *string   `json:"nickname"`
	Role      string    `json:"role"`
	Kind      string    `json:"kind"`
	Email     string    `json:"email"`
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	Score     int64     `json:"score"`
	Ratio     float64   `json:"ratio"`
	Tags      []string  `json:"tags"`
	Address   struct {
		City string `json:"city"`
		Zip  string `json:"zip"`
	} `json:"address"`
}

func soSchemaMap(t *testing.T, schema string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkPerson decodes text strictly into a soPerson, checks that every
// required property is there and validates it against zodV4Schema.
func checkPerson(t *testing.T, text, word string) soPerson {
	t.Helper()
	checkInstance(t, zodV4Schema, []byte(text))
	var p soPerson
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal([]byte(text), &keys)
	for _, k := range soSchemaMap(t, zodV4Schema)["required"].([]any) {
		if _, ok := keys[k.(string)]; !ok {
			t.Errorf("required %q missing from %s", k, text)
		}
	}
	if p.Name != word || p.Email != "mock@example.com" || p.Kind != "person" || p.Role != "admin" ||
		p.CreatedAt.IsZero() || len(p.Address.Zip) != 5 || len(p.Tags) != 1 {
		t.Errorf("person %+v", p)
	}
	return p
}

func TestOpenAISDKStructuredOutput(t *testing.T) {
	client, _ := openAIClient(t, Options{Name: "primary"})
	p, _ := oaParams()
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Strict: openai.Bool(true), Schema: soSchemaMap(t, zodV4Schema)},
	}}
	res, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	content := res.Choices[0].Message.Content
	checkPerson(t, content, "primary")
	if res.Choices[0].FinishReason != "stop" || int(res.Usage.CompletionTokens) != len(pieces(content)) {
		t.Errorf("finish %q usage %d for %d pieces", res.Choices[0].FinishReason, res.Usage.CompletionTokens, len(pieces(content)))
	}

	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	var finished string
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if c, ok := acc.JustFinishedContent(); ok {
			finished = c
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if finished != content || acc.Choices[0].Message.Content != content || acc.Usage.CompletionTokens != res.Usage.CompletionTokens {
		t.Errorf("streamed %q (finished %q, usage %d), non-streamed %q", acc.Choices[0].Message.Content, finished, acc.Usage.CompletionTokens, content)
	}

	// json_object: any JSON object.
	p, _ = oaParams()
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	res, err = client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]string
	if err := json.Unmarshal([]byte(res.Choices[0].Message.Content), &obj); err != nil || obj["mock"] != "primary" {
		t.Errorf("json_object content %q: %v", res.Choices[0].Message.Content, err)
	}

	// A low max_completion_tokens cuts the JSON, with finish_reason length
	// (what makes openai-node's parse throw LengthFinishReasonError).
	p.MaxCompletionTokens = openai.Int(2)
	res, err = client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "length" || res.Choices[0].Message.Content != `{"mock":` {
		t.Errorf("cut: finish %q content %q", res.Choices[0].FinishReason, res.Choices[0].Message.Content)
	}
}

// anTask is parsed by the beta client's auto-parse (the Go SDK's
// messages.parse), which derives the schema from the struct.
type anTask struct {
	Title    string   `json:"title"`
	Done     bool     `json:"done"`
	Priority int      `json:"priority" jsonschema:"minimum=1,maximum=5"`
	Owner    string   `json:"owner" jsonschema:"format=email"`
	Labels   []string `json:"labels"`
	Due      string   `json:"due" jsonschema:"format=date"`
	Sub      struct {
		Note string `json:"note"`
	} `json:"sub"`
}

func checkTask(t *testing.T, task anTask, word string) {
	t.Helper()
	if task.Title != word || !task.Done || task.Priority != 1 || task.Owner != "mock@example.com" ||
		len(task.Labels) != 1 || task.Due != "2024-01-01" || task.Sub.Note != word {
		t.Errorf("task %+v", task)
	}
}

func TestAnthropicSDKStructuredOutput(t *testing.T) {
	client, _ := anthropicClient(t, Options{Name: "primary"})
	p, _ := anParams()
	p.MaxTokens = 1024
	p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: soSchemaMap(t, zodV4Schema)}}
	res, err := client.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("content %+v stop %q", res.Content, res.StopReason)
	}
	text := res.Content[0].Text
	checkPerson(t, text, "primary")
	streamed, deltas, err := accumulate(t, client, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Content[0].Text != text || deltas != len(pieces(text)) || int(streamed.Usage.OutputTokens) != deltas || res.Usage.OutputTokens != streamed.Usage.OutputTokens {
		t.Errorf("streamed %q in %d deltas (usage %d), non-streamed %q (usage %d)", streamed.Content[0].Text, deltas, streamed.Usage.OutputTokens, text, res.Usage.OutputTokens)
	}

	// The beta client parses into the struct it made the schema from, with
	// output_config.format and with the deprecated output_format.
	bp := anthropic.BetaMessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Plan my day"))},
	}
	var task anTask
	bp.OutputConfig = anthropic.BetaOutputConfigParam{Format: anthropic.BetaJSONOutputFormatParam{Schema: &task}}
	if _, err := client.Beta.Messages.New(context.Background(), bp); err != nil {
		t.Fatal(err)
	}
	checkTask(t, task, "primary")

	var old anTask
	bp.OutputConfig = anthropic.BetaOutputConfigParam{}
	bp.OutputFormat = anthropic.BetaJSONOutputFormatParam{Schema: &old}
	if _, err := client.Beta.Messages.New(context.Background(), bp); err != nil {
		t.Fatal(err)
	}
	checkTask(t, old, "primary")

	// Streaming: accumulate, then ParseOutput.
	var fromStream anTask
	bp.OutputFormat = anthropic.BetaJSONOutputFormatParam{}
	bp.OutputConfig = anthropic.BetaOutputConfigParam{Format: anthropic.BetaJSONOutputFormatParam{Schema: &fromStream}}
	stream := client.Beta.Messages.NewStreaming(context.Background(), bp)
	var msg anthropic.BetaMessage
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if err := msg.ParseOutput(&fromStream); err != nil {
		t.Fatal(err)
	}
	checkTask(t, fromStream, "primary")

	// max_tokens cuts the JSON: the beta client reports a parse failure.
	var cut anTask
	bp.MaxTokens = 3
	bp.OutputConfig = anthropic.BetaOutputConfigParam{Format: anthropic.BetaJSONOutputFormatParam{Schema: &cut}}
	res2, err := client.Beta.Messages.New(context.Background(), bp)
	if err == nil || res2 == nil || res2.StopReason != anthropic.BetaStopReasonMaxTokens {
		t.Errorf("cut answer: %v, %+v", err, res2)
	}
}

func TestGeminiSDKStructuredOutput(t *testing.T) {
	client, _ := geminiClient(t, Options{Name: "primary"}, "")
	cfg := gmConfig("")
	cfg.ResponseMIMEType = "application/json"
	cfg.ResponseJsonSchema = soSchemaMap(t, zodV4Schema)
	res, err := client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Text()
	checkPerson(t, text, "primary")
	if res.Candidates[0].FinishReason != genai.FinishReasonStop || int(res.UsageMetadata.CandidatesTokenCount) != len(pieces(text)) {
		t.Errorf("finish %q candidates %d", res.Candidates[0].FinishReason, res.UsageMetadata.CandidatesTokenCount)
	}
	chunks, err := gmStream(t, client, cfg, gmPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if s := gmSummarise(t, chunks); s.text != text || s.deltas != len(pieces(text)) || int(s.usage.CandidatesTokenCount) != s.deltas {
		t.Errorf("streamed %q in %d deltas, non-streamed %q", s.text, s.deltas, text)
	}

	// responseSchema: the OpenAPI subset, as genai.Schema writes it.
	cfg = gmConfig("")
	cfg.ResponseMIMEType = "application/json"
	cfg.ResponseSchema = &genai.Schema{
		Type:     genai.TypeArray,
		MinItems: genai.Ptr[int64](2),
		Items: &genai.Schema{
			Type: genai.TypeObject,
			Properties: map[string]*genai.Schema{
				"recipeName": {Type: genai.TypeString},
				"minutes":    {Type: genai.TypeInteger, Minimum: genai.Ptr(10.0)},
				"course":     {Type: genai.TypeString, Format: "enum", Enum: []string{"main", "dessert"}},
				"rating":     {Type: genai.TypeNumber, Nullable: genai.Ptr(true)},
			},
			PropertyOrdering: []string{"recipeName", "minutes", "course", "rating"},
			Required:         []string{"recipeName", "minutes"},
		},
	}
	res, err = client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"recipeName":"primary","minutes":10,"course":"main","rating":1},{"recipeName":"primary","minutes":10,"course":"main","rating":1}]`
	if res.Text() != want {
		t.Errorf("responseSchema answer %s, want %s", res.Text(), want)
	}
	var recipes []struct {
		RecipeName string  `json:"recipeName"`
		Minutes    int     `json:"minutes"`
		Course     string  `json:"course"`
		Rating     float64 `json:"rating"`
	}
	if err := json.Unmarshal([]byte(res.Text()), &recipes); err != nil || len(recipes) != 2 {
		t.Errorf("recipes %+v: %v", recipes, err)
	}
}

func TestBedrockSDKStructuredOutput(t *testing.T) {
	client, _ := bedrockClient(t, Options{Name: "primary"})
	ctx := context.Background()
	oc := &types.OutputConfig{TextFormat: &types.OutputFormat{
		Type: types.OutputFormatTypeJsonSchema,
		Structure: &types.OutputFormatStructureMemberJsonSchema{Value: types.JsonSchemaDefinition{
			Name: aws.String("person"), Description: aws.String("A person"), Schema: aws.String(zodV4Schema),
		}},
	}}
	in := brInput(brProfileARN)
	in.InferenceConfig.MaxTokens = aws.Int32(1024)
	in.OutputConfig = oc
	out, err := client.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage)
	if len(msg.Value.Content) != 1 {
		t.Fatalf("content %#v", msg.Value.Content)
	}
	text := msg.Value.Content[0].(*types.ContentBlockMemberText).Value
	checkPerson(t, text, "primary")
	if out.StopReason != types.StopReasonEndTurn || int(aws.ToInt32(out.Usage.OutputTokens)) != len(pieces(text)) {
		t.Errorf("stop %q output %d", out.StopReason, aws.ToInt32(out.Usage.OutputTokens))
	}

	sin := brStreamInput(in)
	sin.OutputConfig = oc
	sout, err := client.ConverseStream(ctx, sin)
	if err != nil {
		t.Fatal(err)
	}
	got := readBedrockStream(t, sout)
	if got.err != nil || got.text != text || got.deltas != len(pieces(text)) || int(aws.ToInt32(got.usage.OutputTokens)) != got.deltas {
		t.Errorf("streamed %q in %d deltas (%v), non-streamed %q", got.text, got.deltas, got.err, text)
	}
	if !bytes.Equal([]byte(got.text), []byte(text)) || got.stop != types.StopReasonEndTurn {
		t.Errorf("stop %q", got.stop)
	}
}
