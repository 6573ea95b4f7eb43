package openairesponses

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

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
func decodeTool(s *scanner, l loc) (canonical.Tool, *failure.Public) {
	var f fields.Function
	if p := s.Typed(l, fields.TypeRequired|fields.Deferred, func(key []byte) *failure.Public {
		return s.FunctionMember(&l, key, "parameters", &f)
	}, func(typ []byte) *failure.Public {
		if string(typ) != "function" {
			return words.Bad(l.F("type"), "Invalid value for '%s': '%s' tools are not supported by spillway: %s.", l.F("type"), typ, builtIn)
		}
		return nil
	}); p != nil {
		return canonical.Tool{}, p
	}
	if p := f.CheckName(&words, &l); p != nil {
		return canonical.Tool{}, p
	}
	return f.Tool(), nil
}

// decodeToolChoice returns the choice and where a function name was given
// (checked against tools once all fields are read).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, loc, *failure.Public) {
	return s.ToolChoice(`{"type": "function", "name": "..."}`, func(l loc) (string, loc, *failure.Public) {
		return namedChoice(s, l)
	})
}

// namedChoice reads {"type": "function", "name": ...} at l. Members of
// choice forms spillway refuses (allowed_tools, mcp, custom) are reported
// only after the type that names the form.
func namedChoice(s *scanner, l loc) (string, loc, *failure.Public) {
	var f fields.Function
	if p := s.Typed(l, fields.TypeRequired|fields.Deferred, func(key []byte) *failure.Public {
		return s.NameMember(&l, key, &f)
	}, func(typ []byte) *failure.Public {
		if string(typ) != "function" {
			return words.Bad(l.F("type"), "Invalid value for 'tool_choice.type': '%s'. spillway supports only {\"type\": \"function\", \"name\": \"...\"}: %s.", typ, builtIn)
		}
		return nil
	}); p != nil {
		return "", l, p
	}
	if !f.HasName {
		return "", l, words.Missing(l.F("name"))
	}
	return f.Name, l.F("name"), nil
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
			_, p = s.OptEnum(l.F("verbosity"), "low", "medium", "high")
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
func decodeFormat(s *scanner, l loc) (rf *canonical.ResponseFormat, _ *failure.Public) {
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var f fields.Function
	p := s.Typed(l, fields.TypeRequired, func(key []byte) *failure.Public {
		return s.FunctionMember(&l, key, "schema", &f)
	}, func(typ []byte) *failure.Public {
		var p *failure.Public
		rf, p = format(typ, &f, l)
		return p
	})
	if p != nil {
		return nil, p
	}
	return rf, nil
}

// format is the format at l of type typ, whose other members are in f.
func format(typ []byte, f *fields.Function, l loc) (*canonical.ResponseFormat, *failure.Public) {
	switch string(typ) {
	case "text", "json_object":
		for _, m := range []struct {
			given bool
			name  string
		}{{f.HasName, "name"}, {f.HasSchema, "schema"}, {f.HasStrict, "strict"}, {f.HasDescription, "description"}} {
			if m.given {
				return nil, words.Bad(l.F(m.name), "Invalid parameter: '%s' is only allowed when '%s' is 'json_schema'.", l.F(m.name), l.F("type"))
			}
		}
		if string(typ) == "text" {
			return nil, nil // plain text is the canonical default
		}
		return &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, nil
	case "json_schema":
		if p := f.CheckName(&words, &l); p != nil {
			return nil, p
		}
		if f.Schema == nil {
			return nil, words.Missing(l.F("schema"))
		}
		return f.Format(), nil
	}
	return nil, words.Bad(l.F("type"), "Invalid value for '%s': '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", l.F("type"), typ)
}
