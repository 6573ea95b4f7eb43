package openaichat

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

func decodeTools(s *scanner) ([]canonical.Tool, *failure.Public) {
	l := words.Field("tools")
	given := s.Peek() != 'n'
	out, p := s.Tools(l, func(at loc) (canonical.Tool, *failure.Public) { return decodeTool(s, at) },
		func(at loc, name string) *failure.Public {
			nl := at.F("function").F("name")
			return words.Bad(nl, "Invalid '%s': duplicate function name '%s'; tool names must be unique.", nl, name)
		})
	if p == nil && given && len(out) == 0 {
		return nil, words.EmptyArray(l)
	}
	return out, p
}

func decodeTool(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	var hasType, hasFn bool
	fl := l.F("function")
	if p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			p = functionType(s, l.F("type"), "tools are supported by this gateway")
		case "function":
			hasFn = true
			var f fields.Function
			if f, p = readFunction(s, fl, "parameters"); p == nil && !f.HasName {
				p = words.Missing(fl.F("name"))
			}
			t = f.Tool()
		}
		return p
	}); p != nil {
		return t, p
	}
	switch {
	case !hasType:
		return t, words.Missing(l.F("type"))
	case !hasFn:
		return t, words.Missing(fl)
	}
	return t, nil
}

// readFunction reads a tool's function or a format's json_schema, whose
// schema is named schemaKey. Chat Completions judges a name as it is read,
// before the members after it.
func readFunction(s *scanner, l loc, schemaKey string) (f fields.Function, _ *failure.Public) {
	p := s.Fields(l, func(key []byte) *failure.Public {
		p := s.FunctionMember(&l, key, schemaKey, &f)
		if p == nil && string(key) == "name" && !dialect.ValidToolName(f.Name) {
			p = words.BadName(l.F("name"))
		}
		return p
	})
	return f, p
}

// decodeToolChoice returns the choice and where a function name was given
// (checked against tools once all fields are read).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, loc, *failure.Public) {
	return s.ToolChoice(`{"type": "function", "function": {"name": "..."}}`, func(l loc) (string, loc, *failure.Public) {
		return namedChoice(s, l)
	})
}

// namedChoice reads {"type": "function", "function": {"name": ...}} at l.
func namedChoice(s *scanner, l loc) (string, loc, *failure.Public) {
	var (
		f         fields.Function
		hasFn     bool
		otherKeys string
	)
	fl := l.F("function")
	if p := s.Typed(l, fields.TypeRequired, func(key []byte) *failure.Public {
		switch string(key) {
		case "function":
			hasFn = true
			return s.Fields(fl, func(k []byte) *failure.Public { return s.NameMember(&fl, k, &f) })
		case "custom", "allowed_tools", "name":
			// Members of tool_choice forms this gateway does not support;
			// the type check names the form, and the last one is reported.
			otherKeys = string(key)
			return s.Skip()
		}
		return nil
	}, func(typ []byte) *failure.Public {
		if string(typ) != "function" {
			return words.Bad(l.F("type"), "Invalid value for 'tool_choice.type': '%s'. Only {\"type\": \"function\", \"function\": {\"name\": \"...\"}} is supported by this gateway.", typ)
		}
		return nil
	}); p != nil {
		return "", l, p
	}
	switch {
	case otherKeys != "":
		return "", l, words.Unknown(l.F(otherKeys))
	case !hasFn:
		return "", l, words.Missing(fl)
	case !f.HasName:
		return "", l, words.Missing(fl.F("name"))
	}
	return f.Name, fl.F("name"), nil
}

func decodeResponseFormat(s *scanner) (rf *canonical.ResponseFormat, _ *failure.Public) {
	l := words.Field("response_format")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var (
		f         fields.Function
		hasSchema bool
	)
	sl := l.F("json_schema")
	p := s.Typed(l, fields.TypeRequired, func(key []byte) (p *failure.Public) {
		if string(key) == "json_schema" {
			hasSchema = true
			f, p = readFunction(s, sl, "schema")
		}
		return p
	}, func(typ []byte) *failure.Public {
		var p *failure.Public
		rf, p = responseFormat(typ, hasSchema, &f, sl)
		return p
	})
	if p != nil {
		return nil, p
	}
	return rf, nil
}

// responseFormat is the format of type typ; sl is where its json_schema
// is (read into f when given).
func responseFormat(typ []byte, hasSchema bool, f *fields.Function, sl loc) (*canonical.ResponseFormat, *failure.Public) {
	switch string(typ) {
	case "text", "json_object":
		if hasSchema {
			return nil, words.Bad(sl, "Invalid parameter: 'response_format.json_schema' is only allowed when 'response_format.type' is 'json_schema'.")
		}
		if string(typ) == "text" {
			return nil, nil // plain text is the canonical default
		}
		return &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, nil
	case "json_schema":
		switch {
		case !hasSchema:
			return nil, words.Missing(sl)
		case !f.HasName:
			return nil, words.Missing(sl.F("name"))
		}
		return f.Format(), nil
	}
	return nil, words.Bad(words.Field("response_format").F("type"), "Invalid value for 'response_format.type': '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", typ)
}
