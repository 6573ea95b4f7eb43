package mock

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Embeddings, in each provider's own wire format:
//
//	OpenAI   POST /v1/embeddings
//	Gemini   POST /v1beta/models/{model}:batchEmbedContents and :embedContent
//	         (also under /v1)
//	Bedrock  POST /model/{modelId}/invoke, for a model id containing
//	         "embed": Titan's body, or Cohere's when it contains "cohere."
//
// A vector is derived from its input alone (an FNV-1a hash of the text, or
// of the token ids, seeds a splitmix64 sequence), so every wire gives the
// same text the same vector: embedDefaultDims long unless the request asks
// for a length (at most embedMaxDims), scaled to unit length (except a
// Titan request with "normalize":false), every value a finite float in
// [-1, 1]. Token counts are ceil(len(text)/4) per text, or the number of
// token ids, summed.
//
// Embeddings requests are recorded and counted as generations are, and go
// through the same admission and fault script: status=, retry_after,
// delay, stall, p= and times= act as for a generation; die_after,
// stall_after, error_after and malformed_after act as on a non-streaming
// generation (their K is moot); the other items are ignored.

const (
	embedDefaultDims = 8
	embedMaxDims     = 4096
	oaEmbedPath      = "/v1/embeddings"
	oaMaxEmbedInputs = 2048
	gmMaxEmbedBatch  = 100
	brMaxCohereTexts = 96
)

// embedInput is one input to embed.
type embedInput struct {
	seed   string // what the vector derives from
	tokens int
}

func textInput(s string) embedInput { return embedInput{seed: s, tokens: (len(s) + 3) / 4} }

// idsInput derives from the ids under a prefix no text hashes alike by
// accident ("\x00ids:1,2,3").
func idsInput(ids []int) embedInput {
	b := []byte("\x00ids:")
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return embedInput{seed: string(b), tokens: len(ids)}
}

// embedVector is seed's deterministic vector of length dims, unit length
// when unit is set. Before scaling, a shorter vector is a prefix of a
// longer one.
func embedVector(seed string, dims int, unit bool) []float32 {
	h := fnv.New64a()
	io.WriteString(h, seed)
	x := h.Sum64()
	raw := make([]float64, dims)
	sum := 0.0
	for i := range raw {
		// splitmix64, as call.id uses
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		v := float64(z>>11)/(1<<52) - 1 // [-1, 1)
		raw[i] = v
		sum += v * v
	}
	norm := 1.0
	if unit && sum > 0 {
		norm = math.Sqrt(sum)
	}
	out := make([]float32, dims)
	for i, v := range raw {
		out[i] = float32(max(-1, min(1, v/norm)))
	}
	return out
}

// embedding is a decoded, valid embeddings request; render builds the
// success body (after the faults, so a refused request costs nothing).
type embedding struct {
	model  string // names the model in status errors (OpenAI)
	render func(c *call, h http.Header) []byte
}

// embed answers one embeddings request as generate answers a generation:
// record it, check it as the real provider would, then apply the fault
// script and answer.
func (m *Mock) embed(c *call, w http.ResponseWriter, r *http.Request, decode func(c *call, body []byte) (*embedding, *apiError)) {
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	m.record(r, body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			m.wire.writeError(c, w, m.wire.statusError(c, http.StatusRequestEntityTooLarge, nil))
		}
		return
	}
	perRequest, err := m.parseHeaderScript(r)
	if err != nil {
		m.wire.writeError(c, w, m.wire.badRequest(c, "mock: bad X-Mock-Fault header: "+err.Error()))
		return
	}
	if e := m.wire.admit(c, r, m.opts.APIKey); e != nil {
		m.wire.writeError(c, w, e)
		return
	}
	em, e := decode(c, body)
	if e != nil {
		m.wire.writeError(c, w, e)
		return
	}
	c.req = &request{model: em.model, maxTokens: -1}
	f := m.effective(perRequest, r.Header.Get(headerFault) != "")

	if f.delay > 0 && !m.wait(r, f.delay) {
		return
	}
	if f.stall {
		m.hold(r)
		return
	}
	if f.status != 0 {
		ae := m.wire.statusError(c, f.status, f)
		ae.retryAfter, ae.retryMS = f.retryAfter, f.retryMS
		m.wire.writeError(c, w, ae)
		return
	}
	if f.after == afterError {
		m.wire.writeError(c, w, m.wire.streamError(c, f))
		return
	}
	out := em.render(c, w.Header())
	half := out[:len(out)/2]
	switch f.after {
	case afterDie:
		m.writeBody(c, w, half, len(out))
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	case afterStall:
		m.writeBody(c, w, half, len(out))
		http.NewResponseController(w).Flush()
		m.hold(r)
	case afterMalformed:
		m.writeBody(c, w, half, len(half))
	default:
		m.writeBody(c, w, out, len(out))
	}
}

// ---- OpenAI ----

// serveEmbeddings serves POST /v1/embeddings; false for any other path.
func (o openAIChat) serveEmbeddings(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != oaEmbedPath {
		return false
	}
	if r.Method != http.MethodPost {
		o.writeError(c, w, o.methodError(r))
		return true
	}
	m.embed(c, w, r, func(c *call, body []byte) (*embedding, *apiError) { return o.decodeEmbed(m, body) })
	return true
}

func (o openAIChat) decodeEmbed(m *Mock, body []byte) (*embedding, *apiError) {
	bad := func(param, code, format string, args ...any) (*embedding, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "invalid_request_error", code, fmt.Sprintf(format, args...), param)
	}
	var in struct {
		Model          *string         `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
		User           *string         `json:"user"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return bad(te.Field, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.", te.Field, oaTypeName(te.Type), oaValueName(te.Value))
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			f, _ = strconv.Unquote(f)
			return bad("", "", "Unrecognized request argument supplied: %s", f)
		}
		return bad("", "", "%s", oaParseError)
	}
	if dec.More() {
		return bad("", "", "%s", oaParseError)
	}
	switch {
	case in.Model == nil:
		return bad("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	case *in.Model == "":
		return bad("model", "empty_string", "Invalid 'model': empty string. Expected a string with minimum length 1, but got an empty string instead.")
	case len(in.Input) == 0 || string(in.Input) == "null":
		return bad("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	}
	inputs, e := oaEmbedInputs(in.Input)
	if e != nil {
		return nil, e
	}
	b64 := false
	if f := in.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			b64 = true
		default:
			return bad("encoding_format", "invalid_value", "Invalid value: '%s'. Supported values are: 'float' and 'base64'.", *f)
		}
	}
	dims := embedDefaultDims
	if d := in.Dimensions; d != nil {
		switch {
		case *d < 1:
			return bad("dimensions", "integer_below_min_value", "Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got %d instead.", *d)
		case *d > embedMaxDims:
			return bad("dimensions", "integer_above_max_value", "Invalid 'dimensions': integer above maximum value. Expected a value <= %d, but got %d instead.", embedMaxDims, *d)
		}
		dims = *d
	}
	model := *in.Model
	if m.opts.Model != "" {
		model = m.opts.Model
	}
	render := func(*call, http.Header) []byte {
		type datum struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding any    `json:"embedding"`
		}
		data := make([]datum, len(inputs))
		tokens := 0
		for i, in := range inputs {
			v := embedVector(in.seed, dims, true)
			data[i] = datum{Object: "embedding", Index: i, Embedding: v}
			if b64 {
				raw := make([]byte, 0, 4*len(v))
				for _, f := range v {
					raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
				}
				data[i].Embedding = base64.StdEncoding.EncodeToString(raw)
			}
			tokens += in.tokens
		}
		type usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
		return marshal(struct {
			Object string  `json:"object"`
			Data   []datum `json:"data"`
			Model  string  `json:"model"`
			Usage  usage   `json:"usage"`
		}{"list", data, model, usage{tokens, tokens}})
	}
	return &embedding{model: *in.Model, render: render}, nil
}

// oaEmbedInputs reads input: a string, an array of strings, an array of
// token ids, or an array of arrays of token ids.
func oaEmbedInputs(raw json.RawMessage) ([]embedInput, *apiError) {
	bad := func(param, code, format string, args ...any) ([]embedInput, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "invalid_request_error", code, fmt.Sprintf(format, args...), param)
	}
	const typeMsg = "Invalid type for 'input': expected one of a string, an array of strings, an array of integers, or an array of arrays of integers."
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || s == "" {
			return bad("input", "empty_string", "Invalid 'input': empty string. Expected a string with minimum length 1, but got an empty string instead.")
		}
		return []embedInput{textInput(s)}, nil
	case '[':
	default:
		return bad("input", "invalid_type", typeMsg)
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return bad("input", "invalid_type", typeMsg)
	}
	switch {
	case len(items) == 0:
		return bad("input", "empty_array", "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	case len(items) > oaMaxEmbedInputs:
		return bad("input", "array_above_max_length", "Invalid 'input': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", oaMaxEmbedInputs, len(items))
	}
	validIDs := func(ids []int) bool {
		for _, id := range ids {
			if id < 0 {
				return false
			}
		}
		return len(ids) > 0
	}
	out := make([]embedInput, len(items))
	switch bytes.TrimSpace(items[0])[0] {
	case '"':
		for i, it := range items {
			var s string
			if json.Unmarshal(it, &s) != nil || s == "" {
				return bad(fmt.Sprintf("input[%d]", i), "invalid_value", "Invalid 'input[%d]': expected a non-empty string.", i)
			}
			out[i] = textInput(s)
		}
	case '[':
		for i, it := range items {
			var ids []int
			if json.Unmarshal(it, &ids) != nil || !validIDs(ids) {
				return bad(fmt.Sprintf("input[%d]", i), "invalid_value", "Invalid 'input[%d]': expected a non-empty array of non-negative integer token ids.", i)
			}
			out[i] = idsInput(ids)
		}
	default:
		var ids []int
		if json.Unmarshal(raw, &ids) != nil || !validIDs(ids) {
			return bad("input", "invalid_type", typeMsg)
		}
		return []embedInput{idsInput(ids)}, nil
	}
	return out, nil
}

// ---- Gemini ----

// gmEmbedRoute splits /v1beta/models/{model}:batchEmbedContents and
// :embedContent (also under /v1).
func gmEmbedRoute(path string) (model string, batch, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1beta/models/")
	if !found {
		if rest, found = strings.CutPrefix(path, "/v1/models/"); !found {
			return "", false, false
		}
	}
	model, method, found := strings.Cut(rest, ":")
	if !found || model == "" || strings.Contains(model, "/") {
		return "", false, false
	}
	switch method {
	case "batchEmbedContents":
		batch = true
	case "embedContent":
	default:
		return "", false, false
	}
	return model, batch, true
}

// serveEmbeddings serves :batchEmbedContents and :embedContent; false for
// any other path.
func (g geminiAPI) serveEmbeddings(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	model, batch, ok := gmEmbedRoute(r.URL.Path)
	if !ok {
		return false
	}
	if r.Method != http.MethodPost {
		g.writeError(c, w, g.methodError(r))
		return true
	}
	c.routeModel = model
	m.embed(c, w, r, func(c *call, body []byte) (*embedding, *apiError) { return g.decodeEmbed(c, body, batch) })
	return true
}

// gmEmbedKnown are EmbedContentRequest's members.
var gmEmbedKnown = map[string]bool{"model": true, "content": true, "taskType": true, "title": true, "outputDimensionality": true}

var gmTaskTypes = map[string]bool{
	"TASK_TYPE_UNSPECIFIED": true, "RETRIEVAL_QUERY": true, "RETRIEVAL_DOCUMENT": true, "SEMANTIC_SIMILARITY": true,
	"CLASSIFICATION": true, "CLUSTERING": true, "QUESTION_ANSWERING": true, "FACT_VERIFICATION": true, "CODE_RETRIEVAL_QUERY": true,
}

type gmEmbedRequest struct {
	Model   *string `json:"model"`
	Content *struct {
		Parts []map[string]json.RawMessage `json:"parts"`
	} `json:"content"`
	TaskType             *string `json:"taskType"`
	OutputDimensionality *int    `json:"outputDimensionality"`
}

func (g geminiAPI) decodeEmbed(c *call, body []byte, batch bool) (*embedding, *apiError) {
	bad := func(field, format string, args ...any) (*embedding, *apiError) {
		return nil, newAPIError(http.StatusBadRequest, "INVALID_ARGUMENT", "", fmt.Sprintf(format, args...), field)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return bad("", "Invalid JSON payload received. Unexpected token.")
	}
	// raws are the EmbedContentRequests, with where they sit: the proto
	// name for messages, the JSON path for unknown names.
	type item struct {
		raw        json.RawMessage
		name, path string
	}
	var items []item
	if batch {
		for _, k := range sortedKeys(top) {
			if k != "requests" {
				return bad(k, "Invalid JSON payload received. Unknown name %q: Cannot find field.", k)
			}
		}
		var reqs []json.RawMessage
		if err := json.Unmarshal(top["requests"], &reqs); err != nil {
			return bad("requests", "Invalid JSON payload received. Expected an array for 'requests'.")
		}
		switch {
		case len(reqs) == 0:
			return bad("requests", "* BatchEmbedContentsRequest.requests: requests is not specified\n")
		case len(reqs) > gmMaxEmbedBatch:
			return bad("requests", "* BatchEmbedContentsRequest.requests: at most %d requests can be in one batch\n", gmMaxEmbedBatch)
		}
		for i, raw := range reqs {
			items = append(items, item{raw, fmt.Sprintf("BatchEmbedContentsRequest.requests[%d]", i), fmt.Sprintf("requests[%d]", i)})
		}
	} else {
		items = []item{{body, "EmbedContentRequest", ""}}
	}
	want := "models/" + c.routeModel
	type one struct {
		in   embedInput
		dims int
	}
	ones := make([]one, len(items))
	for i, it := range items {
		var fields map[string]json.RawMessage
		if json.Unmarshal(it.raw, &fields) != nil || fields == nil {
			return bad(it.path, "Invalid JSON payload received. Expected an object at '%s'.", it.path)
		}
		for _, k := range sortedKeys(fields) {
			if !gmEmbedKnown[k] {
				if it.path == "" {
					return bad(k, "Invalid JSON payload received. Unknown name %q: Cannot find field.", k)
				}
				return bad(it.path, "Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, it.path)
			}
		}
		var in gmEmbedRequest
		if err := json.Unmarshal(it.raw, &in); err != nil {
			return bad(it.path, "Invalid JSON payload received. %s", err)
		}
		at := func(f string) string {
			if it.path == "" {
				return f
			}
			return it.path + "." + f
		}
		if batch || in.Model != nil {
			switch {
			case in.Model == nil || !strings.HasPrefix(*in.Model, "models/"):
				return bad(at("model"), "* %s.model: unexpected model name format\n", it.name)
			case *in.Model != want:
				return bad(at("model"), "* %s.model: the model of the request, %s, differs from the model of the URL, %s\n", it.name, *in.Model, want)
			}
		}
		if in.Content == nil {
			return bad(at("content"), "* %s.content: content is not specified\n", it.name)
		}
		if len(in.Content.Parts) == 0 {
			return bad(at("content.parts"), "* %s.content.parts: contents.parts must not be empty.\n", it.name)
		}
		var text strings.Builder
		for j, p := range in.Content.Parts {
			var s string
			if raw, ok := p["text"]; !ok || len(p) != 1 || json.Unmarshal(raw, &s) != nil {
				return bad(at(fmt.Sprintf("content.parts[%d]", j)), "mock: only text parts are embedded (%s.content.parts[%d])", it.name, j)
			}
			text.WriteString(s)
		}
		if t := in.TaskType; t != nil && !gmTaskTypes[*t] {
			return bad(at("task_type"), "Invalid value at '%s' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), %q", at("task_type"), *t)
		}
		dims := embedDefaultDims
		if d := in.OutputDimensionality; d != nil {
			if *d < 1 || *d > embedMaxDims {
				return bad(at("output_dimensionality"), "* %s.output_dimensionality: output_dimensionality must be between 1 and %d, got %d\n", it.name, embedMaxDims, *d)
			}
			dims = *d
		}
		ones[i] = one{textInput(text.String()), dims}
	}
	type values struct {
		Values []float32 `json:"values"`
	}
	render := func(*call, http.Header) []byte {
		if !batch {
			return marshal(struct {
				Embedding values `json:"embedding"`
			}{values{embedVector(ones[0].in.seed, ones[0].dims, true)}})
		}
		out := make([]values, len(ones))
		for i, o := range ones {
			out[i] = values{embedVector(o.in.seed, o.dims, true)}
		}
		return marshal(struct {
			Embeddings []values `json:"embeddings"`
		}{out})
	}
	return &embedding{model: c.routeModel, render: render}, nil
}

// ---- Bedrock ----

// brInvokeRoute splits an escaped path /model/{modelId}/invoke, as
// bedrockRoute does the converse routes.
func brInvokeRoute(escaped string) (model string, ok bool) {
	rest, found := strings.CutPrefix(escaped, "/model/")
	if !found {
		return "", false
	}
	label, op, found := strings.Cut(rest, "/")
	if !found || label == "" || op != "invoke" {
		return "", false
	}
	model, err := url.PathUnescape(label)
	if err != nil {
		return "", false
	}
	return model, true
}

// serveEmbeddings serves InvokeModel for Titan and Cohere embedding models;
// false for any other path. Only a model id that names an embedding model
// (every Titan and Cohere one contains "embed", in an ARN too) is served:
// InvokeModel of any other model stays an unknown operation, as before.
func (b bedrockConverse) serveEmbeddings(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool {
	model, ok := brInvokeRoute(r.URL.EscapedPath())
	if !ok || !strings.Contains(model, "embed") {
		return false
	}
	if r.Method != http.MethodPost {
		b.writeError(c, w, b.methodError(r))
		return true
	}
	m.embed(c, w, r, func(c *call, body []byte) (*embedding, *apiError) {
		if strings.Contains(model, "cohere.") {
			return b.decodeCohere(model, body)
		}
		return b.decodeTitan(model, body)
	})
	return true
}

// brMalformed is a ValidationException as Bedrock words a body its model's
// JSON schema rejects.
func brMalformed(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "ValidationException", "",
		"Malformed input request: "+fmt.Sprintf(format, args...)+", please reformat your input and try again.", "")
}

// brJSONType names a JSON value's type as Bedrock's schema errors do.
func brJSONType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "Null"
	}
	switch raw[0] {
	case '"':
		return "String"
	case '{':
		return "JSONObject"
	case '[':
		return "JSONArray"
	case 't', 'f':
		return "Boolean"
	case 'n':
		return "Null"
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "BigDecimal"
	}
	return "Integer"
}

// brFields reads a JSON object body and rejects members outside known.
func brFields(body []byte, known ...string) (map[string]json.RawMessage, *apiError) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil || fields == nil {
		return nil, newAPIError(http.StatusBadRequest, "ValidationException", "", "Malformed input request, please reformat your input and try again.", "")
	}
	keys := sortedKeys(fields)
	for _, k := range keys {
		found := false
		for _, kk := range known {
			found = found || k == kk
		}
		if !found {
			return nil, brMalformed("#: extraneous key [%s] is not permitted", k)
		}
	}
	return fields, nil
}

// brTyped decodes fields[key] into v when present, with Bedrock's type
// error; false when absent.
func brTyped(fields map[string]json.RawMessage, key, want string, v any) (bool, *apiError) {
	raw, ok := fields[key]
	if !ok {
		return false, nil
	}
	if json.Unmarshal(raw, v) != nil || brJSONType(raw) == "Null" {
		return false, brMalformed("#/%s: expected type: %s, found: %s", key, want, brJSONType(raw))
	}
	return true, nil
}

func (b bedrockConverse) invokeHeaders(c *call, h http.Header, tokens int) {
	h.Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(tokens))
	h.Set("X-Amzn-Bedrock-Invocation-Latency", strconv.FormatInt(c.elapsedMS(), 10))
}

// decodeTitan reads Amazon Titan Text Embeddings' body: inputText, and
// (v2) dimensions, normalize and embeddingTypes.
func (b bedrockConverse) decodeTitan(model string, body []byte) (*embedding, *apiError) {
	fields, e := brFields(body, "inputText", "dimensions", "normalize", "embeddingTypes")
	if e != nil {
		return nil, e
	}
	var text string
	if ok, e := brTyped(fields, "inputText", "String", &text); e != nil {
		return nil, e
	} else if !ok {
		return nil, brMalformed("#: required key [inputText] not found")
	}
	if text == "" {
		return nil, brMalformed("#/inputText: expected minLength: 1, actual: 0")
	}
	dims, normalize := embedDefaultDims, true
	var d int
	if ok, e := brTyped(fields, "dimensions", "Integer", &d); e != nil {
		return nil, e
	} else if ok {
		switch {
		case d < 1:
			return nil, brMalformed("#/dimensions: %d is not greater or equal to 1", d)
		case d > embedMaxDims:
			return nil, brMalformed("#/dimensions: %d is not less or equal to %d", d, embedMaxDims)
		}
		dims = d
	}
	if _, e := brTyped(fields, "normalize", "Boolean", &normalize); e != nil {
		return nil, e
	}
	var types []string
	if _, e := brTyped(fields, "embeddingTypes", "JSONArray", &types); e != nil {
		return nil, e
	}
	for i, t := range types {
		if t != "float" && t != "binary" {
			return nil, brMalformed("#/embeddingTypes/%d: %s is not a valid enum value", i, t)
		}
	}
	in := textInput(text)
	render := func(c *call, h http.Header) []byte {
		b.invokeHeaders(c, h, in.tokens)
		v := embedVector(in.seed, dims, normalize)
		var byType map[string]any
		for _, t := range types {
			if byType == nil {
				byType = map[string]any{}
			}
			if t == "float" {
				byType[t] = v
				continue
			}
			bits := make([]int, len(v))
			for i, f := range v {
				if f > 0 {
					bits[i] = 1
				}
			}
			byType[t] = bits
		}
		return marshal(struct {
			Embedding           []float32      `json:"embedding"`
			EmbeddingsByType    map[string]any `json:"embeddingsByType,omitempty"`
			InputTextTokenCount int            `json:"inputTextTokenCount"`
		}{v, byType, in.tokens})
	}
	return &embedding{model: model, render: render}, nil
}

// decodeCohere reads Cohere Embed's body: texts, input_type, and optional
// truncate and embedding_types (float only).
func (b bedrockConverse) decodeCohere(model string, body []byte) (*embedding, *apiError) {
	fields, e := brFields(body, "texts", "input_type", "truncate", "embedding_types")
	if e != nil {
		return nil, e
	}
	var texts []string
	if ok, e := brTyped(fields, "texts", "JSONArray", &texts); e != nil {
		return nil, e
	} else if !ok {
		return nil, brMalformed("#: required key [texts] not found")
	}
	switch {
	case len(texts) == 0:
		return nil, brMalformed("#/texts: expected minimum item count: 1, found: 0")
	case len(texts) > brMaxCohereTexts:
		return nil, brMalformed("#/texts: expected maximum item count: %d, found: %d", brMaxCohereTexts, len(texts))
	}
	var inputType string
	if ok, e := brTyped(fields, "input_type", "String", &inputType); e != nil {
		return nil, e
	} else if !ok {
		return nil, brMalformed("#: required key [input_type] not found")
	}
	switch inputType {
	case "search_document", "search_query", "classification", "clustering":
	default:
		return nil, brMalformed("#/input_type: %s is not a valid enum value", inputType)
	}
	var truncate string
	if ok, e := brTyped(fields, "truncate", "String", &truncate); e != nil {
		return nil, e
	} else if ok && truncate != "NONE" && truncate != "START" && truncate != "END" {
		return nil, brMalformed("#/truncate: %s is not a valid enum value", truncate)
	}
	var types []string
	byType, e := brTyped(fields, "embedding_types", "JSONArray", &types)
	if e != nil {
		return nil, e
	}
	for i, t := range types {
		switch t {
		case "float":
		case "int8", "uint8", "binary", "ubinary":
			return nil, newAPIError(http.StatusBadRequest, "ValidationException", "", "mock: only float embedding_types are served", "")
		default:
			return nil, brMalformed("#/embedding_types/%d: %s is not a valid enum value", i, t)
		}
	}
	ins := make([]embedInput, len(texts))
	tokens := 0
	for i, s := range texts {
		ins[i] = textInput(s)
		tokens += ins[i].tokens
	}
	render := func(c *call, h http.Header) []byte {
		b.invokeHeaders(c, h, tokens)
		vs := make([][]float32, len(ins))
		for i, in := range ins {
			vs[i] = embedVector(in.seed, embedDefaultDims, true)
		}
		var embeddings any = vs
		responseType := "embeddings_floats"
		if byType {
			embeddings, responseType = map[string][][]float32{}, "embeddings_by_type"
			if len(types) > 0 {
				embeddings = map[string][][]float32{"float": vs}
			}
		}
		id := c.hexID("", 32, 11)
		return marshal(struct {
			ID           string   `json:"id"`
			Texts        []string `json:"texts"`
			Embeddings   any      `json:"embeddings"`
			ResponseType string   `json:"response_type"`
		}{id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:], texts, embeddings, responseType})
	}
	return &embedding{model: model, render: render}, nil
}
