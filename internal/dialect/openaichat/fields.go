package openaichat

import "github.com/spillway-gw/spillway/internal/dialect/fields"

// words is this dialect's error wording: OpenAI's (see fields.OpenAI). The
// shared field readers (dialect/fields) speak through it.
var words = fields.OpenAI

// scanner is the shared pull parser with the shared field readers.
type scanner = fields.Reader

// loc is the path of a request field, e.g. messages[2].content[0].text.
type loc = fields.Path
