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
	Pattern:      "Invalid '%[1]s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
	Empty:        "Invalid '%[1]s': empty array. Expected an array with minimum length 1, but got an empty array instead.",
	Enum:         "Invalid value for '%[1]s': '%[2]s'. Supported values are: %[3]s.",
	Or:           " and ",
	NotObject:    "request body must be a JSON object, but got %[1]s instead",
	Syntax:       "request body is not valid JSON: %[1]s at offset %[2]d",
}

// ToolChoice reads an OpenAI tool_choice: null (nil), a mode string
// ("none", "auto" or "required"), or an object naming one function, the
// form in which the dialects differ. form is how the dialect writes that
// object in the error for any other string; named reads it at p and
// returns the function's name and where the name was given. at is that
// place (tool_choice for a mode), for the check against the tools
// declared, which can only come once every field is read.
func (r *Reader) ToolChoice(form string, named func(p Path) (string, Path, *failure.Public)) (tc *canonical.ToolChoice, at Path, _ *failure.Public) {
	p := r.w.Field("tool_choice")
	switch r.Peek() {
	case 'n':
		return nil, p, r.Literal("null")
	case '{':
		name, at, e := named(p)
		if e != nil {
			return nil, p, e
		}
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: name}, at, nil
	case '"':
	default:
		return nil, p, r.TypeErr(p, "a string or an object")
	}
	v, e := r.StrRaw(p)
	if e != nil {
		return nil, p, e
	}
	switch string(v) {
	case "none":
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, p, nil
	case "auto":
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, p, nil
	case "required":
		return &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, p, nil
	}
	return nil, p, r.w.Bad(p, "Invalid value for 'tool_choice': '%s'. Supported values are: 'none', 'auto', 'required' or %s.", v, form)
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

// OpenAIRequest is what the two OpenAI dialects' requests have in common:
// the canonical request, a required model, and stream_options, which only
// a stream may have. Each dialect embeds it in its own request.
type OpenAIRequest struct {
	canonical.Request
	hasModel bool
	// StreamOptions records that stream_options was given (and not null).
	StreamOptions bool
}

// Canonical is the request in canonical form.
func (q *OpenAIRequest) Canonical() *canonical.Request { return &q.Request }

// ReadModel reads the model member (see Model).
func (q *OpenAIRequest) ReadModel(r *Reader) (e *failure.Public) {
	q.hasModel = true
	q.Model, e = r.Model()
	return e
}

// CheckModel reports a request without a model.
func (q *OpenAIRequest) CheckModel(w *Wording) *failure.Public {
	if !q.hasModel {
		return w.Missing(w.Field("model"))
	}
	return nil
}

// CheckStreamOptions reports stream_options given without stream.
func (q *OpenAIRequest) CheckStreamOptions(w *Wording) *failure.Public {
	if q.StreamOptions && !q.Stream {
		return w.Bad(w.Field("stream_options"), "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	return nil
}
