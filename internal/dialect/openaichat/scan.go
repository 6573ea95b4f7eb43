package openaichat

import "github.com/spillway-gw/spillway/internal/dialect/jsonscan"

// scanner is the shared pull parser, given this dialect's field readers
// (fields.go) with OpenAI's wording.
type scanner struct{ jsonscan.Scanner }
