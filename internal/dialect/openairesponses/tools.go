package openairesponses

import (
	"encoding/json"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

func badName(l loc) *failure.Public {
	return bad(l, "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", l)
}

// builtIn is the reason every non-function tool is refused.
const builtIn = "only 'function' tools are available through every provider; built-in tools such as web search, file search, computer use and code interpreter are not"

func decodeTools(s *scanner) ([]canonical.Tool, *failure.Public) {
	l := field("tools")
	if isNull, p := s.null(); isNull || p != nil {
		return nil, p
	}
	if p := s.array(l); p != nil {
		return nil, p
	}
	var out []canonical.Tool
	var names dialect.Index // unique names, checked in constant time
	for i := 0; ; i++ {
		ok, p := s.NextElem(i == 0)
		if p != nil {
			return nil, p
		}
		if !ok {
			return out, nil
		}
		if out == nil {
			out = make([]canonical.Tool, 0, 4)
		}
		t, p := decodeTool(s, l.At(i))
		if p != nil {
			return nil, p
		}
		if _, dup := names.Add(t.Name); dup {
			nl := l.At(i).F("name")
			return nil, bad(nl, "Invalid '%s': duplicate function name '%s'; tool names must be unique.", nl, t.Name)
		}
		out = append(out, t)
	}
}

// decodeTool reads one flat function tool. Members are read before the type
// is known (SDKs send type last), so an unknown member is only reported once
// the type turns out to be 'function'.
func decodeTool(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	if p := s.object(l); p != nil {
		return t, p
	}
	var (
		typ     []byte
		hasType bool
		hasName bool
		other   string
	)
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return t, p
		}
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.strRaw(l.F("type"))
		case "name":
			hasName = true
			t.Name, p = s.str(l.F("name"))
		case "description":
			t.Description, _, p = s.optStr(l.F("description"))
		case "parameters":
			t.Parameters, p = s.schema(l.F("parameters"))
		case "strict":
			// Absent or null is false: the canonical tool cannot say "unset".
			var b *bool
			if b, p = s.optBool(l.F("strict")); b != nil {
				t.Strict = *b
			}
		default:
			if other == "" {
				other = string(key)
			}
			p = s.Skip()
		}
		if p != nil {
			return t, p
		}
	}
	switch {
	case !hasType:
		return t, missing(l.F("type"))
	case string(typ) != "function":
		return t, bad(l.F("type"), "Invalid value for '%s': '%s' tools are not supported by spillway: %s.", l.F("type"), typ, builtIn)
	case other != "":
		return t, unrecognized(l.F(other))
	case !hasName:
		return t, missing(l.F("name"))
	case !dialect.ValidToolName(t.Name):
		return t, badName(l.F("name"))
	}
	return t, nil
}

// schema reads a JSON Schema kept as raw JSON: an object, or null for none.
func (s *scanner) schema(l loc) (json.RawMessage, *failure.Public) {
	if isNull, p := s.null(); isNull || p != nil {
		return nil, p
	}
	if s.Peek() != '{' {
		return nil, s.typeErr(l, "an object (a JSON Schema)")
	}
	return s.Raw()
}

// decodeToolChoice returns the choice and where a function name was given
// (checked against tools once all fields are read).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, loc, *failure.Public) {
	l := field("tool_choice")
	switch s.Peek() {
	case 'n':
		return nil, l, s.Literal("null")
	case '"':
		v, p := s.RawString()
		if p != nil {
			return nil, l, p
		}
		switch string(v) {
		case "none":
			return &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, l, nil
		case "auto":
			return &canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, l, nil
		case "required":
			return &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, l, nil
		}
		return nil, l, bad(l, "Invalid value for 'tool_choice': '%s'. Supported values are: 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": \"...\"}.", v)
	case '{':
	default:
		return nil, l, s.typeErr(l, "a string or an object")
	}
	s.Open()
	var (
		typ     []byte
		name    string
		hasType bool
		hasName bool
		other   string
	)
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return nil, l, p
		}
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.strRaw(l.F("type"))
		case "name":
			hasName = true
			name, p = s.str(l.F("name"))
		default:
			// Members of choice forms spillway refuses (allowed_tools,
			// mcp, custom); the type check below names the form.
			if other == "" {
				other = string(key)
			}
			p = s.Skip()
		}
		if p != nil {
			return nil, l, p
		}
	}
	switch {
	case !hasType:
		return nil, l, missing(l.F("type"))
	case string(typ) != "function":
		return nil, l, bad(l.F("type"), "Invalid value for 'tool_choice.type': '%s'. spillway supports only {\"type\": \"function\", \"name\": \"...\"}: %s.", typ, builtIn)
	case other != "":
		return nil, l, unrecognized(l.F(other))
	case !hasName:
		return nil, l, missing(l.F("name"))
	}
	return &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: name}, l.F("name"), nil
}

// decodeText reads the text configuration: format becomes the canonical
// response format (nil for plain text); verbosity is checked and ignored.
func decodeText(s *scanner) (*canonical.ResponseFormat, *failure.Public) {
	l := field("text")
	if isNull, p := s.null(); isNull || p != nil {
		return nil, p
	}
	if p := s.object(l); p != nil {
		return nil, p
	}
	var rf *canonical.ResponseFormat
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil || !ok {
			return rf, p
		}
		switch string(key) {
		case "format":
			rf, p = decodeFormat(s, l.F("format"))
		case "verbosity":
			p = s.optEnum(l.F("verbosity"), "low", "medium", "high")
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return nil, p
		}
	}
}

// decodeFormat reads {type:"text"|"json_object"} or the flat
// {type:"json_schema", name, schema, strict, description}.
func decodeFormat(s *scanner, l loc) (*canonical.ResponseFormat, *failure.Public) {
	if isNull, p := s.null(); isNull || p != nil {
		return nil, p
	}
	if p := s.object(l); p != nil {
		return nil, p
	}
	var (
		typ                []byte
		rf                 canonical.ResponseFormat
		hasType, hasName   bool
		hasSchema          bool
		schemaOnly, strict string // a json_schema member given to another type
	)
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return nil, p
		}
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.strRaw(l.F("type"))
		case "name":
			hasName = true
			rf.Name, p = s.str(l.F("name"))
		case "schema":
			hasSchema = true
			rf.Schema, p = s.schema(l.F("schema"))
		case "strict":
			strict = "strict"
			var b *bool
			if b, p = s.optBool(l.F("strict")); b != nil {
				rf.Strict = *b
			}
		case "description":
			schemaOnly = "description"
			_, _, p = s.optStr(l.F("description"))
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return nil, p
		}
	}
	if !hasType {
		return nil, missing(l.F("type"))
	}
	switch string(typ) {
	case "text", "json_object":
		for _, m := range []struct {
			given bool
			name  string
		}{{hasName, "name"}, {hasSchema, "schema"}, {strict != "", "strict"}, {schemaOnly != "", "description"}} {
			if m.given {
				return nil, bad(l.F(m.name), "Invalid parameter: '%s' is only allowed when '%s' is 'json_schema'.", l.F(m.name), l.F("type"))
			}
		}
		if string(typ) == "text" {
			return nil, nil // plain text is the canonical default
		}
		return &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, nil
	case "json_schema":
		switch {
		case !hasName:
			return nil, missing(l.F("name"))
		case !dialect.ValidToolName(rf.Name):
			return nil, badName(l.F("name"))
		case rf.Schema == nil:
			return nil, missing(l.F("schema"))
		}
		rf.Type = canonical.FormatJSONSchema
		return &rf, nil
	}
	return nil, bad(l.F("type"), "Invalid value for '%s': '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", l.F("type"), typ)
}
