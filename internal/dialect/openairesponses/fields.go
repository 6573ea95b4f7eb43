package openairesponses

import (
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

// words is this dialect's error wording: OpenAI's (see fields.OpenAI),
// naming spillway in refusals. The shared field readers (dialect/fields)
// speak through it.
var words = func() fields.Wording {
	w := fields.OpenAI
	w.Refused = "'%[1]s' is not supported by spillway: %[2]s."
	return w
}()

// scanner is the shared pull parser with the shared field readers.
type scanner = fields.Reader

// loc is the path of a request field, e.g. input[2].content[0].text.
type loc = fields.Path

func notEmpty(l loc) *failure.Public {
	return words.Bad(l, "Invalid value for '%s': it must not be empty.", l)
}

// sub scans a raw value captured earlier (a member whose meaning depends on
// a type given later in the same object). raw is valid JSON sharing the
// body's memory, so strings read from it alias the body as usual.
func sub(raw []byte) scanner { return fields.New(raw, &words) }
