package fields

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// OpenAI is how OpenAI words its request errors, in Chat Completions and
// Responses alike; each of those dialects starts its table from it.
var OpenAI = Wording{
	Path: Brackets,
	Kinds: Kinds{String: "a string", Bool: "a boolean", Int: "an integer", Number: "a number",
		Object: "an object", Array: "an array", Schema: "an object (a JSON Schema)"},
	Type:         "Invalid type for '%[1]s': expected %[2]s, but got %[3]s instead.",
	Fraction:     "Invalid type for '%[1]s': expected an integer, but got a decimal number instead.",
	Overflow:     "Invalid '%[1]s': number out of range.",
	Range:        "Invalid '%[1]s': expected a number between %[2]g and %[3]g, but got %[4]g instead.",
	Required:     "Missing required parameter: '%[1]s'.",
	Unrecognized: "Unrecognized parameter: '%[1]s'.",
	Refused:      "'%[1]s' is not supported by this gateway: %[2]s.",
	NotObject:    "request body must be a JSON object, but got %[1]s instead",
	Syntax:       "request body is not valid JSON: %[1]s at offset %[2]d",
}

// ToolChoiceMode reads the forms of an OpenAI tool_choice that are not an
// object: null (nil) or a mode string, "none", "auto" or "required"
// (badMode words any other string). object reports an object next, left
// for the dialect to read.
func (r *Reader) ToolChoiceMode(p Path, badMode func(v []byte) *failure.Public) (tc *canonical.ToolChoice, object bool, _ *failure.Public) {
	switch r.Peek() {
	case 'n':
		return nil, false, r.Literal("null")
	case '{':
		return nil, true, nil
	case '"':
	default:
		return nil, false, r.TypeErr(p, "a string or an object")
	}
	v, e := r.StrRaw(p)
	if e != nil {
		return nil, false, e
	}
	switch string(v) {
	case "none":
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, false, nil
	case "auto":
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, false, nil
	case "required":
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, false, nil
	}
	return nil, false, badMode(v)
}

// Model reads OpenAI's model: a string that is not empty.
func (r *Reader) Model() (string, *failure.Public) {
	p := r.w.Field("model")
	m, e := r.Str(p)
	if e == nil && m == "" {
		e = r.w.Bad(p, "Invalid 'model': you must provide a model name.")
	}
	return m, e
}
