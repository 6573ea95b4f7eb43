package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/auth/bearer"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The official aws-sdk-go-v2 bedrockruntime client is the judge of the
// Bedrock mock's wire format: paths, SigV4 and bearer auth, JSON bodies,
// the binary event stream, and typed errors.

// brProfileARN is an inference-profile ARN: the SDK percent-encodes its ':'
// and '/' into one path label.
const brProfileARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"

func bedrockClient(t *testing.T, opts Options) (*bedrockruntime.Client, *Mock) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = "bedrock-api-key-0123456789" // SigV4 is accepted whatever the key
	}
	m, srv := newMock(t, "bedrock", opts)
	return sdkClient(srv, nil), m
}

// sdkClient is a bedrockruntime client pointed at srv. With token nil it
// signs with static SigV4 keys; otherwise it sends the token as a Bedrock
// API key (which the SDK only does over HTTPS).
func sdkClient(srv *httptest.Server, token *string) *bedrockruntime.Client {
	o := bedrockruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		HTTPClient:   &http.Client{Transport: ownBodies{srv.Client().Transport}},
		Retryer:      aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", SessionToken: "session"}, nil
		}),
	}
	if token != nil {
		o.BearerAuthTokenProvider = bearer.TokenProviderFunc(func(context.Context) (bearer.Token, error) {
			return bearer.Token{Value: *token}, nil
		})
		o.AuthSchemePreference = []string{"httpBearerAuth"}
	}
	return bedrockruntime.New(o)
}

// ownBodies hands the transport its own copy of each request body. The SDK
// closes its body wrapper as soon as a streaming call returns, and smithy-go's
// closed wrapper answers WriteTo with io.EOF as an error; when that lands
// on net/http's check for bytes past Content-Length (after the mock already
// answered), the transport closes the connection mid-stream. Loopback under
// -race hits that window; the copy keeps the SDK's race out of the verdict
// on the mock.
type ownBodies struct{ next http.RoundTripper }

func (o ownBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return o.next.RoundTrip(r)
}

// withFault sends a per-request fault script.
func withFault(script string) func(*bedrockruntime.Options) {
	return func(o *bedrockruntime.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Mock-Fault", script))
	}
}

func brInput(model string) *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId: aws.String(model),
		Messages: []types.Message{{Role: types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Weather in Paris?"}}}},
		System:          []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(256)},
	}
}

func brStreamInput(in *bedrockruntime.ConverseInput) *bedrockruntime.ConverseStreamInput {
	return &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, Messages: in.Messages, System: in.System,
		InferenceConfig: in.InferenceConfig, ToolConfig: in.ToolConfig}
}

func brWeatherTools(names ...string) *types.ToolConfiguration {
	tc := &types.ToolConfiguration{}
	for _, n := range names {
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name:        aws.String(n),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}})},
		}})
	}
	return tc
}

// brStreamed is what a client assembles from a ConverseStream.
type brStreamed struct {
	text      string
	deltas    int
	tools     []types.ToolUseBlockStart
	toolInput map[int32]string
	stop      types.StopReason
	usage     *types.TokenUsage
	order     []string
	err       error
}

func readBedrockStream(t *testing.T, out *bedrockruntime.ConverseStreamOutput) brStreamed {
	t.Helper()
	st := out.GetStream()
	defer st.Close()
	got := brStreamed{toolInput: map[int32]string{}}
	for ev := range st.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			got.order = append(got.order, "messageStart")
			if v.Value.Role != types.ConversationRoleAssistant {
				t.Errorf("messageStart role %q", v.Value.Role)
			}
		case *types.ConverseStreamOutputMemberContentBlockStart:
			got.order = append(got.order, "contentBlockStart")
			if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				got.tools = append(got.tools, tu.Value)
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			got.order = append(got.order, "contentBlockDelta")
			var d string
			switch dv := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				d = dv.Value
				got.text += d
			case *types.ContentBlockDeltaMemberToolUse:
				d = aws.ToString(dv.Value.Input)
				got.toolInput[aws.ToInt32(v.Value.ContentBlockIndex)] += d
			default:
				t.Errorf("unexpected delta %T", dv)
			}
			if d == "" || len(d) > 4 {
				t.Errorf("content delta %q: want 1..4 bytes", d)
			}
			got.deltas++
		case *types.ConverseStreamOutputMemberContentBlockStop:
			got.order = append(got.order, "contentBlockStop")
		case *types.ConverseStreamOutputMemberMessageStop:
			got.order = append(got.order, "messageStop")
			got.stop = v.Value.StopReason
		case *types.ConverseStreamOutputMemberMetadata:
			got.order = append(got.order, "metadata")
			got.usage = v.Value.Usage
		default:
			t.Errorf("unknown stream member %T", v)
		}
	}
	got.err = st.Err()
	return got
}

func TestBedrockSDKConverseText(t *testing.T) {
	client, m := bedrockClient(t, Options{Name: "primary"})
	ctx := context.Background()
	out, err := client.Converse(ctx, brInput(brProfileARN), withFault("cached=5"))
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok || len(msg.Value.Content) != 1 {
		t.Fatalf("output %#v", out.Output)
	}
	text := msg.Value.Content[0].(*types.ContentBlockMemberText).Value
	if !strings.HasPrefix(text, "mock primary ") || msg.Value.Role != types.ConversationRoleAssistant || out.StopReason != types.StopReasonEndTurn {
		t.Errorf("text %q role %q stop %q", text, msg.Value.Role, out.StopReason)
	}
	rec := m.Requests()[0]
	total := int32((len(rec.Body) + 3) / 4)
	u := out.Usage
	if aws.ToInt32(u.OutputTokens) != defaultTokens || aws.ToInt32(u.CacheReadInputTokens) != 5 ||
		aws.ToInt32(u.InputTokens)+5 != total || aws.ToInt32(u.TotalTokens) != total+defaultTokens {
		t.Errorf("usage in %d out %d total %d cacheRead %d; want cache reads apart from input, %d prompt tokens in all",
			aws.ToInt32(u.InputTokens), aws.ToInt32(u.OutputTokens), aws.ToInt32(u.TotalTokens), aws.ToInt32(u.CacheReadInputTokens), total)
	}
	if out.Metrics == nil {
		t.Error("no metrics")
	}
	// The ARN travelled as one escaped label and was signed with SigV4.
	if want := "/model/" + brProfileARN + "/converse"; rec.Path != want {
		t.Errorf("path %q, want %q", rec.Path, want)
	}
	if auth := rec.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/") || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("Authorization %q, want SigV4 for service bedrock", auth)
	}

	streamed, err := client.ConverseStream(ctx, brStreamInput(brInput(brProfileARN)), withFault("cached=5"))
	if err != nil {
		t.Fatal(err)
	}
	got := readBedrockStream(t, streamed)
	if got.err != nil {
		t.Fatal(got.err)
	}
	wantOrder := []string{"messageStart"}
	for range defaultTokens {
		wantOrder = append(wantOrder, "contentBlockDelta")
	}
	wantOrder = append(wantOrder, "contentBlockStop", "messageStop", "metadata")
	if strings.Join(got.order, ",") != strings.Join(wantOrder, ",") {
		t.Errorf("event order %v, want %v (no contentBlockStart for text, metadata last)", got.order, wantOrder)
	}
	if got.text != text || got.stop != types.StopReasonEndTurn || got.usage == nil {
		t.Fatalf("streamed %q stop %q usage %v; non-streamed %q", got.text, got.stop, got.usage, text)
	}
	su := got.usage
	if int(aws.ToInt32(su.OutputTokens)) != got.deltas || aws.ToInt32(su.CacheReadInputTokens) != 5 || aws.ToInt32(su.InputTokens)+5 != total {
		t.Errorf("streamed usage out %d cacheRead %d in %d with %d deltas", aws.ToInt32(su.OutputTokens), aws.ToInt32(su.CacheReadInputTokens), aws.ToInt32(su.InputTokens), got.deltas)
	}
	if rec := m.Requests()[1]; rec.Path != "/model/"+brProfileARN+"/converse-stream" {
		t.Errorf("stream path %q", rec.Path)
	}
}

func TestBedrockSDKMaxTokensStopAndRefusal(t *testing.T) {
	client, _ := bedrockClient(t, Options{Name: "x"})
	ctx := context.Background()
	in := brInput("anthropic.claude-3-haiku-20240307-v1:0")
	in.InferenceConfig.MaxTokens = aws.Int32(3)
	out, err := client.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != types.StopReasonMaxTokens || aws.ToInt32(out.Usage.OutputTokens) != 3 {
		t.Errorf("stop %q output %d", out.StopReason, aws.ToInt32(out.Usage.OutputTokens))
	}
	in.InferenceConfig.MaxTokens = aws.Int32(256)
	in.InferenceConfig.StopSequences = []string{"ipsum"}
	out, err = client.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if text := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value; out.StopReason != types.StopReasonStopSequence || strings.Contains(text, "ipsum") {
		t.Errorf("stop %q text %q", out.StopReason, text)
	}

	in.InferenceConfig.StopSequences = nil
	out, err = client.Converse(ctx, in, withFault("refusal"))
	if err != nil {
		t.Fatal(err)
	}
	if msg := out.Output.(*types.ConverseOutputMemberMessage).Value; out.StopReason != types.StopReasonGuardrailIntervened || len(msg.Content) != 0 || aws.ToInt32(out.Usage.OutputTokens) != 0 {
		t.Errorf("refusal: stop %q content %v output %d", out.StopReason, msg.Content, aws.ToInt32(out.Usage.OutputTokens))
	}
	streamed, err := client.ConverseStream(ctx, brStreamInput(in), withFault("refusal"))
	if err != nil {
		t.Fatal(err)
	}
	got := readBedrockStream(t, streamed)
	if got.err != nil || got.stop != types.StopReasonGuardrailIntervened || got.deltas != 0 || got.usage == nil {
		t.Errorf("streamed refusal: err %v stop %q deltas %d usage %v", got.err, got.stop, got.deltas, got.usage)
	}
}

func TestBedrockSDKToolUse(t *testing.T) {
	client, _ := bedrockClient(t, Options{})
	ctx := context.Background()
	in := brInput("anthropic.claude-3-haiku-20240307-v1:0")
	in.ToolConfig = brWeatherTools("get_weather", "get_time")
	out, err := client.Converse(ctx, in, withFault(`tools=2;args={"city":"Paris","days":3}`))
	if err != nil {
		t.Fatal(err)
	}
	content := out.Output.(*types.ConverseOutputMemberMessage).Value.Content
	if out.StopReason != types.StopReasonToolUse || len(content) != 2 {
		t.Fatalf("stop %q content %d blocks", out.StopReason, len(content))
	}
	for i, want := range []string{"get_weather", "get_time"} {
		tu := content[i].(*types.ContentBlockMemberToolUse).Value
		var args map[string]any
		if err := tu.Input.UnmarshalSmithyDocument(&args); err != nil {
			t.Fatal(err)
		}
		if aws.ToString(tu.Name) != want || !strings.HasPrefix(aws.ToString(tu.ToolUseId), "tooluse_") || args["city"] != "Paris" {
			t.Errorf("tool %d: %s %s %v", i, aws.ToString(tu.Name), aws.ToString(tu.ToolUseId), args)
		}
	}
	fragments := len(pieces(`{"city":"Paris","days":3}`))
	if got := aws.ToInt32(out.Usage.OutputTokens); got != int32(2*fragments) {
		t.Errorf("output tokens %d, want %d (one per argument fragment)", got, 2*fragments)
	}

	streamed, err := client.ConverseStream(ctx, brStreamInput(in), withFault(`tools=2;args={"city":"Paris","days":3}`))
	if err != nil {
		t.Fatal(err)
	}
	got := readBedrockStream(t, streamed)
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.stop != types.StopReasonToolUse || len(got.tools) != 2 || got.deltas != 2*fragments || int(aws.ToInt32(got.usage.OutputTokens)) != got.deltas {
		t.Fatalf("stop %q tools %d deltas %d usage %v", got.stop, len(got.tools), got.deltas, got.usage)
	}
	for i, tu := range got.tools {
		var args map[string]any
		if err := json.Unmarshal([]byte(got.toolInput[int32(i)]), &args); err != nil || args["days"] != 3.0 {
			t.Errorf("tool %d (%s) input %q: %v", i, aws.ToString(tu.Name), got.toolInput[int32(i)], err)
		}
		if !strings.HasPrefix(aws.ToString(tu.ToolUseId), "tooluse_") || aws.ToString(tu.Name) != aws.ToString(content[i].(*types.ContentBlockMemberToolUse).Value.Name) {
			t.Errorf("tool %d: id %q name %q", i, aws.ToString(tu.ToolUseId), aws.ToString(tu.Name))
		}
	}

	// Handing the results back gets a text answer.
	in.Messages = append(in.Messages,
		types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{content[0]}},
		types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
			ToolUseId: content[0].(*types.ContentBlockMemberToolUse).Value.ToolUseId,
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "18C"}},
		}}}})
	out, err = client.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != types.StopReasonEndTurn {
		t.Errorf("after tool results: stop %q", out.StopReason)
	}
}

func TestBedrockSDKErrors(t *testing.T) {
	tests := []struct {
		fault  string
		check  func(error) bool
		status int
	}{
		{"status=429", func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }, 429},
		{"status=503", func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }, 503},
		{"status=529", func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }, 503},
		{"status=500", func(err error) bool { var e *types.InternalServerException; return errors.As(err, &e) }, 500},
		{"status=403", func(err error) bool { var e *types.AccessDeniedException; return errors.As(err, &e) }, 403},
		{"status=400", func(err error) bool { var e *types.ValidationException; return errors.As(err, &e) }, 400},
		{"status=404", func(err error) bool { var e *types.ResourceNotFoundException; return errors.As(err, &e) }, 404},
		{"status=408", func(err error) bool { var e *types.ModelTimeoutException; return errors.As(err, &e) }, 408},
		{"status=424", func(err error) bool { var e *types.ModelErrorException; return errors.As(err, &e) }, 424},
		{"status=429;error_type=ModelNotReadyException", func(err error) bool { var e *types.ModelNotReadyException; return errors.As(err, &e) }, 429},
		{"error_after=2", func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }, 503},
	}
	client, _ := bedrockClient(t, Options{})
	ctx := context.Background()
	in := brInput("amazon.nova-pro-v1:0")
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			_, err := client.Converse(ctx, in, withFault(tt.fault))
			if !tt.check(err) {
				t.Fatalf("Converse err = %T %v", err, err)
			}
			var re *smithyhttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != tt.status {
				t.Errorf("status %v, want %d", err, tt.status)
			}
			if strings.HasPrefix(tt.fault, "error_after") {
				return // the streaming variant sends the error inside the stream
			}
			_, err = client.ConverseStream(ctx, brStreamInput(in), withFault(tt.fault))
			if !tt.check(err) {
				t.Errorf("ConverseStream err = %T %v", err, err)
			}
		})
	}
}

func TestBedrockSDKStreamExceptions(t *testing.T) {
	tests := []struct {
		fault string
		check func(error) bool
	}{
		{"error_after=2", func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }},
		{"error_after=2;error_type=throttlingException;message=Too many tokens per day, please wait before trying again.", func(err error) bool {
			var e *types.ThrottlingException
			return errors.As(err, &e) && e.ErrorMessage() == "Too many tokens per day, please wait before trying again."
		}},
		{"error_after=0;error_type=ThrottlingException", func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }},
		{"error_after=3;error_type=internalServerException", func(err error) bool { var e *types.InternalServerException; return errors.As(err, &e) }},
		{"error_after=3;error_type=modelStreamErrorException", func(err error) bool { var e *types.ModelStreamErrorException; return errors.As(err, &e) }},
		{"error_after=3;error_type=validationException", func(err error) bool { var e *types.ValidationException; return errors.As(err, &e) }},
	}
	client, _ := bedrockClient(t, Options{})
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			out, err := client.ConverseStream(context.Background(), brStreamInput(brInput("amazon.nova-pro-v1:0")), withFault(tt.fault))
			if err != nil {
				t.Fatal(err)
			}
			got := readBedrockStream(t, out)
			if !tt.check(got.err) {
				t.Fatalf("stream.Err() = %T %v", got.err, got.err)
			}
			if got.usage != nil || got.stop != "" {
				t.Errorf("an interrupted stream reached messageStop/metadata: %v", got.order)
			}
		})
	}
}

// The other stream faults break the stream. The SDK reports a bad CRC, but
// may take a connection cut mid-stream for a clean end (smithy-go's decoder
// treats io.ErrUnexpectedEOF as io.EOF): then only the missing messageStop
// and metadata give the cut away, which is why the adapter insists on
// metadata.
func TestBedrockSDKBrokenStreams(t *testing.T) {
	client, _ := bedrockClient(t, Options{})
	for _, fault := range []string{"die_after=2", "malformed_after=2"} {
		out, err := client.ConverseStream(context.Background(), brStreamInput(brInput("amazon.nova-pro-v1:0")), withFault(fault))
		if err != nil {
			t.Fatal(err)
		}
		got := readBedrockStream(t, out)
		// A cut may still surface as a read error, depending on timing.
		if (fault == "malformed_after=2" && got.err == nil) || got.deltas != 2 || got.usage != nil || got.stop != "" {
			t.Errorf("%s: err %v after %d deltas, stop %q usage %v", fault, got.err, got.deltas, got.stop, got.usage)
		}
	}
	// no_terminal: the answer ends after messageStop, with no usage.
	out, err := client.ConverseStream(context.Background(), brStreamInput(brInput("amazon.nova-pro-v1:0")), withFault("no_terminal"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readBedrockStream(t, out); got.err != nil || got.stop != types.StopReasonEndTurn || got.usage != nil {
		t.Errorf("no_terminal: err %v stop %q usage %v", got.err, got.stop, got.usage)
	}
}

// A Bedrock API key travels as a bearer token (over HTTPS, as the SDK
// insists); a wrong one is refused the way AWS refuses a bad credential.
func TestBedrockSDKBearerKey(t *testing.T) {
	m, err := New("bedrock", Options{APIKey: "ABSKbedrockkey0123"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(m)
	t.Cleanup(func() { m.Close(); srv.Close() })
	ctx := context.Background()

	good := "ABSKbedrockkey0123"
	if _, err := sdkClient(srv, &good).Converse(ctx, brInput("amazon.nova-pro-v1:0")); err != nil {
		t.Fatal(err)
	}
	if auth := m.Requests()[0].Header.Get("Authorization"); auth != "Bearer "+good {
		t.Errorf("Authorization %q", auth)
	}
	bad := "ABSKwrong"
	_, err = sdkClient(srv, &bad).Converse(ctx, brInput("amazon.nova-pro-v1:0"))
	var ae smithy.APIError
	var re *smithyhttp.ResponseError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnrecognizedClientException" || !errors.As(err, &re) || re.HTTPStatusCode() != 403 {
		t.Fatalf("wrong key: %T %v", err, err)
	}
	// SigV4 is accepted whatever the keys (the signature is not checked).
	if _, err := sdkClient(srv, nil).Converse(ctx, brInput("amazon.nova-pro-v1:0")); err != nil {
		t.Fatal(err)
	}
}

// The mock refuses what Bedrock refuses, in Bedrock's words.
func TestBedrockSDKValidation(t *testing.T) {
	client, _ := bedrockClient(t, Options{})
	ctx := context.Background()
	tests := []struct {
		name string
		in   *bedrockruntime.ConverseInput
		want string
	}{
		{"starts with assistant", &bedrockruntime.ConverseInput{ModelId: aws.String("m"), Messages: []types.Message{
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}},
			"must start with a user message"},
		{"roles do not alternate", &bedrockruntime.ConverseInput{ModelId: aws.String("m"), Messages: []types.Message{
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "a"}}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "b"}}}}},
			"must alternate"},
		{"blank text", &bedrockruntime.ConverseInput{ModelId: aws.String("m"), Messages: []types.Message{
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: " "}}}}},
			"is blank"},
		{"tool blocks without toolConfig", &bedrockruntime.ConverseInput{ModelId: aws.String("m"), Messages: []types.Message{
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
				ToolUseId: aws.String("tooluse_1"), Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "x"}}}}}}}},
			"toolConfig field must be defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Converse(ctx, tt.in)
			var ve *types.ValidationException
			if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), tt.want) {
				t.Fatalf("err = %v, want a ValidationException saying %q", err, tt.want)
			}
		})
	}
}
