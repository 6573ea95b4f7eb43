// Package openaiembed is the OpenAI Embeddings caller dialect
// (POST /v1/embeddings): it decodes a request into a canonical embeddings
// request and writes the list of vectors back, as floats or, when the
// caller asks (openai-node does by default), as base64 little-endian
// float32. Errors take OpenAI's shape, as in Chat Completions.
package openaiembed

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// Bounds on a request, OpenAI's own: at most 2048 inputs per request.
const (
	MaxInputs     = 2048
	MaxDimensions = 1 << 16
)

// Dialect is the Embeddings wire format. Streaming does not exist for it;
// errors and the (unused) stream encoder are Chat Completions'.
type Dialect struct {
	*openaichat.Dialect
}

var _ dialect.Dialect = (*Dialect)(nil)

// New returns the dialect.
func New() *Dialect { return &Dialect{Dialect: openaichat.New()} }

// Name is the dialect's id.
func (*Dialect) Name() string { return "openai-embeddings" }

// IDPrefix is unused: an embeddings list has no id.
func (*Dialect) IDPrefix() string { return "emb-" }

type request struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           *string         `json:"user"`
}

func bad(param, format string, args ...any) *failure.Public {
	return failure.BadRequest(param, format, args...)
}

// Decode validates an embeddings request.
func (*Dialect) Decode(body []byte, _ http.Header) (*canonical.Request, *failure.Public) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var in request
	if err := dec.Decode(&in); err != nil {
		return nil, decodeError(err)
	}
	if dec.More() {
		return nil, bad("", "We could not parse the JSON body of your request: it holds more than one JSON value.")
	}
	switch {
	case in.Model == nil:
		return nil, bad("model", "Missing required parameter: 'model'.")
	case *in.Model == "":
		return nil, bad("model", "Invalid 'model': empty string. Expected a string with minimum length 1.")
	case len(in.Input) == 0 || string(in.Input) == "null":
		return nil, bad("input", "Missing required parameter: 'input'.")
	}
	e := &canonical.EmbedInput{}
	if p := decodeInput(in.Input, e); p != nil {
		return nil, p
	}
	if f := in.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			e.Base64 = true
		default:
			return nil, bad("encoding_format", "Invalid value for 'encoding_format': '%s'. Supported values are: 'float' and 'base64'.", *f)
		}
	}
	if d := in.Dimensions; d != nil {
		if *d < 1 || *d > MaxDimensions {
			return nil, bad("dimensions", "Invalid 'dimensions': integer out of range. Expected a value between 1 and %d, but got %d instead.", MaxDimensions, *d)
		}
		e.Dimensions = *d
	}
	// An embedding has no output; the one token bounds the reservation.
	return &canonical.Request{Model: *in.Model, Embed: e, MaxTokens: 1}, nil
}

func decodeError(err error) *failure.Public {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case asType(err, &te) && te.Field != "":
		return bad(te.Field, "Invalid type for '%s': expected %s, but got %s instead.", te.Field, te.Type, te.Value)
	case asType(err, &se):
		return bad("", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)")
	}
	if f, ok := unknownField(err); ok {
		return bad(f, "Unrecognized request argument supplied: %s", f)
	}
	return bad("", "We could not parse the JSON body of your request: %v", err)
}

// decodeInput reads input: a string, an array of strings, an array of
// token ids, or an array of arrays of token ids.
func decodeInput(raw json.RawMessage, e *canonical.EmbedInput) *failure.Public {
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return bad("input", "Invalid 'input': %v.", err)
		}
		if s == "" {
			return bad("input", "Invalid 'input': empty string. Expected a non-empty string.")
		}
		e.Texts = []string{s}
		return nil
	case '[':
	default:
		return bad("input", "Invalid type for 'input': expected a string, an array of strings, an array of integers or an array of arrays of integers.")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return bad("input", "Invalid 'input': %v.", err)
	}
	switch {
	case len(items) == 0:
		return bad("input", "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	case len(items) > MaxInputs:
		return bad("input", "Invalid 'input': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxInputs, len(items))
	}
	first := bytes.TrimSpace(items[0])
	switch {
	case len(first) > 0 && first[0] == '"':
		e.Texts = make([]string, len(items))
		for i, it := range items {
			if err := json.Unmarshal(it, &e.Texts[i]); err != nil || e.Texts[i] == "" {
				return bad(fmt.Sprintf("input[%d]", i), "Invalid 'input[%d]': expected a non-empty string.", i)
			}
		}
	case len(first) > 0 && first[0] == '[':
		e.Tokens = make([][]int, len(items))
		for i, it := range items {
			if err := json.Unmarshal(it, &e.Tokens[i]); err != nil || len(e.Tokens[i]) == 0 || !tokenIDs(e.Tokens[i]) {
				return bad(fmt.Sprintf("input[%d]", i), "Invalid 'input[%d]': expected a non-empty array of non-negative integer token ids.", i)
			}
		}
	default:
		var ids []int
		if err := json.Unmarshal(raw, &ids); err != nil || !tokenIDs(ids) {
			return bad("input", "Invalid 'input': expected an array of strings, of non-negative integer token ids, or of arrays of them.")
		}
		e.Tokens = [][]int{ids}
	}
	return nil
}

func tokenIDs(ids []int) bool {
	for _, id := range ids {
		if id < 0 {
			return false
		}
	}
	return true
}

// AppendResponse appends the list of embeddings.
func (*Dialect) AppendResponse(dst []byte, m dialect.Meta, req *canonical.Request, resp *canonical.Response) []byte {
	b64 := req.Embed != nil && req.Embed.Base64
	dst = append(dst, `{"object":"list","data":[`...)
	var raw []byte
	for i, v := range resp.Embeddings {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"object":"embedding","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"embedding":`...)
		if b64 {
			raw = raw[:0]
			for _, f := range v {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, raw)
			dst = append(dst, '"')
		} else {
			dst = append(dst, '[')
			for k, f := range v {
				if k > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"model":`...)
	dst = jsonwrite.AppendString(dst, m.Model)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(resp.Usage.InputTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(resp.Usage.InputTokens), 10)
	return append(dst, "}}"...)
}
