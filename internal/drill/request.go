package drill

import (
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"

	"strconv"
)

// Dialect is a caller wire format the drill speaks.
type Dialect uint8

// The caller dialects, each on its own endpoint.
const (
	Chat      Dialect = iota // OpenAI Chat Completions
	Responses                // OpenAI Responses
	Messages                 // Anthropic Messages
	numDialects
)

// String is the dialect's name as the gateway calls it.
func (d Dialect) String() string {
	switch d {
	case Chat:
		return "openai-chat"
	case Responses:
		return "openai-responses"
	case Messages:
		return "anthropic-messages"
	}
	return "dialect(" + strconv.Itoa(int(d)) + ")"
}

// Path is the dialect's generation endpoint.
func (d Dialect) Path() string {
	switch d {
	case Responses:
		return "/v1/responses"
	case Messages:
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// Shape is what the schedule decided for one request.
type Shape struct {
	Dialect Dialect
	Stream  bool
	Tools   bool
	// MaxTokens is the output ceiling asked for; below the mock's answer
	// length it stops the answer early (finish "length", Responses
	// "incomplete"), which is still a complete answer.
	MaxTokens int
	// Words is the prompt's length in filler words, so input tokens vary.
	Words int
	// Idem sends the request with an Idempotency-Key, then sends it again:
	// the second must be a replay of the first (same request id, no second
	// settlement).
	Idem bool
	// Invalid makes the body wrong in a way every dialect refuses (400
	// before any provider or ledger is touched): the caller's own 4xx.
	Invalid bool
}

const toolSchema = `{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`

// appendBody appends the JSON body of one request in its dialect.
func appendBody(dst []byte, model string, s Shape) []byte {
	dst = append(dst, `{"model":`...)
	dst = jsonwrite.AppendString(dst, model)
	switch s.Dialect {
	case Responses:
		dst = append(dst, `,"max_output_tokens":`...)
	default:
		dst = append(dst, `,"max_tokens":`...)
	}
	if s.Invalid {
		dst = append(dst, `"lots"`...)
	} else {
		dst = strconv.AppendInt(dst, int64(s.MaxTokens), 10)
	}
	if s.Stream {
		dst = append(dst, `,"stream":true`...)
		if s.Dialect == Chat {
			dst = append(dst, `,"stream_options":{"include_usage":true}`...)
		}
	}
	if s.Tools {
		switch s.Dialect {
		case Chat:
			dst = append(dst, `,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city.","parameters":`+toolSchema+`}}]`...)
		case Responses:
			dst = append(dst, `,"tools":[{"type":"function","name":"get_weather","description":"Weather for a city.","parameters":`+toolSchema+`}]`...)
		case Messages:
			dst = append(dst, `,"tools":[{"name":"get_weather","description":"Weather for a city.","input_schema":`+toolSchema+`}]`...)
		}
	}
	if s.Dialect == Responses {
		dst = append(dst, `,"input":"`...)
	} else {
		dst = append(dst, `,"messages":[{"role":"user","content":"`...)
	}
	dst = append(dst, "What is the weather in Paris?"...)
	for i := 0; i < s.Words; i++ {
		dst = append(dst, fillerWord(i)...)
	}
	if s.Dialect == Responses {
		return append(dst, `"}`...)
	}
	return append(dst, `"}]}`...)
}

// fillerWord is the i-th word of the prompt's filler, with its space.
func fillerWord(i int) string {
	switch i % 8 {
	case 0:
		return " lorem"
	case 1:
		return " ipsum"
	case 2:
		return " dolor"
	case 3:
		return " sit"
	case 4:
		return " amet"
	case 5:
		return " consectetur"
	case 6:
		return " adipiscing"
	}
	return " elit"
}
