package openairesponses

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

func badName(l loc) *failure.Public {
	return words.Bad(l, "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", l)
}

// builtIn is the reason every non-function tool is refused.
const builtIn = "only 'function' tools are available through every provider; built-in tools such as web search, file search, computer use and code interpreter are not"

func decodeTools(s *scanner) ([]canonical.Tool, *failure.Public) {
	return s.Tools(words.Field("tools"), func(at loc) (canonical.Tool, *failure.Public) { return decodeTool(s, at) },
		func(at loc, name string) *failure.Public {
			nl := at.F("name")
			return words.Bad(nl, "Invalid '%s': duplicate function name '%s'; tool names must be unique.", nl, name)
		})
}

// decodeTool reads one flat function tool. Members are read before the type
// is known (SDKs send type last), so an unknown member is only reported once
// the type turns out to be 'function'.
func decodeTool(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	var (
		typ     []byte
		hasType bool
		hasName bool
		other   string
	)
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "name":
			hasName = true
			t.Name, p = s.Str(l.F("name"))
		case "description":
			t.Description, _, p = s.OptStr(l.F("description"))
		case "parameters":
			t.Parameters, p = s.Schema(l.F("parameters"))
		case "strict":
			// Absent or null is false: the canonical tool cannot say "unset".
			var b *bool
			if b, p = s.OptBool(l.F("strict")); b != nil {
				t.Strict = *b
			}
		default:
			if other == "" {
				other = string(key)
			}
			p = s.Skip()
		}
		return p
	}); p != nil {
		return t, p
	}
	switch {
	case !hasType:
		return t, words.Missing(l.F("type"))
	case string(typ) != "function":
		return t, words.Bad(l.F("type"), "Invalid value for '%s': '%s' tools are not supported by spillway: %s.", l.F("type"), typ, builtIn)
	case other != "":
		return t, words.Unknown(l.F(other))
	case !hasName:
		return t, words.Missing(l.F("name"))
	case !dialect.ValidToolName(t.Name):
		return t, badName(l.F("name"))
	}
	return t, nil
}

// decodeToolChoice returns the choice and where a function name was given
// (checked against tools once all fields are read).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, loc, *failure.Public) {
	l := words.Field("tool_choice")
	tc, object, p := s.ToolChoiceMode(l, func(v []byte) *failure.Public {
		return words.Bad(l, "Invalid value for 'tool_choice': '%s'. Supported values are: 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": \"...\"}.", v)
	})
	if !object || p != nil {
		return tc, l, p
	}
	var (
		typ     []byte
		name    string
		hasType bool
		hasName bool
		other   string
	)
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "name":
			hasName = true
			name, p = s.Str(l.F("name"))
		default:
			// Members of choice forms spillway refuses (allowed_tools,
			// mcp, custom); the type check below names the form.
			if other == "" {
				other = string(key)
			}
			p = s.Skip()
		}
		return p
	}); p != nil {
		return nil, l, p
	}
	switch {
	case !hasType:
		return nil, l, words.Missing(l.F("type"))
	case string(typ) != "function":
		return nil, l, words.Bad(l.F("type"), "Invalid value for 'tool_choice.type': '%s'. spillway supports only {\"type\": \"function\", \"name\": \"...\"}: %s.", typ, builtIn)
	case other != "":
		return nil, l, words.Unknown(l.F(other))
	case !hasName:
		return nil, l, words.Missing(l.F("name"))
	}
	return &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: name}, l.F("name"), nil
}

// decodeText reads the text configuration: format becomes the canonical
// response format (nil for plain text); verbosity is checked and ignored.
func decodeText(s *scanner) (*canonical.ResponseFormat, *failure.Public) {
	l := words.Field("text")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var rf *canonical.ResponseFormat
	p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "format":
			rf, p = decodeFormat(s, l.F("format"))
		case "verbosity":
			p = optEnum(s, l.F("verbosity"), "low", "medium", "high")
		default:
			p = words.Unknown(l.F(string(key)))
		}
		return p
	})
	if p != nil {
		return nil, p
	}
	return rf, nil
}

// decodeFormat reads {type:"text"|"json_object"} or the flat
// {type:"json_schema", name, schema, strict, description}.
func decodeFormat(s *scanner, l loc) (*canonical.ResponseFormat, *failure.Public) {
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var (
		typ                []byte
		rf                 canonical.ResponseFormat
		hasType, hasName   bool
		hasSchema          bool
		schemaOnly, strict string // a json_schema member given to another type
	)
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "name":
			hasName = true
			rf.Name, p = s.Str(l.F("name"))
		case "schema":
			hasSchema = true
			rf.Schema, p = s.Schema(l.F("schema"))
		case "strict":
			strict = "strict"
			var b *bool
			if b, p = s.OptBool(l.F("strict")); b != nil {
				rf.Strict = *b
			}
		case "description":
			schemaOnly = "description"
			_, _, p = s.OptStr(l.F("description"))
		default:
			p = words.Unknown(l.F(string(key)))
		}
		return p
	}); p != nil {
		return nil, p
	}
	if !hasType {
		return nil, words.Missing(l.F("type"))
	}
	switch string(typ) {
	case "text", "json_object":
		for _, m := range []struct {
			given bool
			name  string
		}{{hasName, "name"}, {hasSchema, "schema"}, {strict != "", "strict"}, {schemaOnly != "", "description"}} {
			if m.given {
				return nil, words.Bad(l.F(m.name), "Invalid parameter: '%s' is only allowed when '%s' is 'json_schema'.", l.F(m.name), l.F("type"))
			}
		}
		if string(typ) == "text" {
			return nil, nil // plain text is the canonical default
		}
		return &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, nil
	case "json_schema":
		switch {
		case !hasName:
			return nil, words.Missing(l.F("name"))
		case !dialect.ValidToolName(rf.Name):
			return nil, badName(l.F("name"))
		case rf.Schema == nil:
			return nil, words.Missing(l.F("schema"))
		}
		rf.Type = canonical.FormatJSONSchema
		return &rf, nil
	}
	return nil, words.Bad(l.F("type"), "Invalid value for '%s': '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", l.F("type"), typ)
}
