package openaichat

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
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
		return nil, words.Bad(l, "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	return out, p
}

func decodeTool(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	var hasType, hasFn bool
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			var typ []byte
			if typ, p = s.StrRaw(l.F("type")); p == nil && string(typ) != "function" {
				p = words.Bad(l.F("type"), "Invalid value for '%s': '%s'. Only 'function' tools are supported by this gateway.", l.F("type"), typ)
			}
		case "function":
			hasFn = true
			t, p = decodeFunction(s, l.F("function"))
		default:
			p = words.Unknown(l.F(string(key)))
		}
		return p
	}); p != nil {
		return t, p
	}
	switch {
	case !hasType:
		return t, words.Missing(l.F("type"))
	case !hasFn:
		return t, words.Missing(l.F("function"))
	}
	return t, nil
}

func decodeFunction(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	hasName := false
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "name":
			hasName = true
			if t.Name, p = s.Str(l.F("name")); p == nil && !dialect.ValidToolName(t.Name) {
				p = words.Bad(l.F("name"), "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", l.F("name"))
			}
		case "description":
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			t.Description, p = s.Str(l.F("description"))
		case "parameters":
			t.Parameters, p = s.Schema(l.F("parameters"))
		case "strict":
			var b *bool
			if b, p = s.OptBool(l.F("strict")); b != nil {
				t.Strict = *b
			}
		default:
			p = words.Unknown(l.F(string(key)))
		}
		return p
	}); p != nil {
		return t, p
	}
	if !hasName {
		return t, words.Missing(l.F("name"))
	}
	return t, nil
}

// decodeToolChoice returns the choice and where a function name was given
// (checked against tools once all fields are read).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, loc, *failure.Public) {
	l := words.Field("tool_choice")
	tc, object, p := s.ToolChoiceMode(l, func(v []byte) *failure.Public {
		return words.Bad(l, "Invalid value for 'tool_choice': '%s'. Supported values are: 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": \"...\"}}.", v)
	})
	if !object || p != nil {
		return tc, l, p
	}
	var (
		typ       []byte
		name      string
		hasType   bool
		hasName   bool
		hasFn     bool
		otherKeys string
	)
	fl := l.F("function")
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "function":
			hasFn = true
			p = s.Members(fl, func(k []byte) *failure.Public {
				if string(k) != "name" {
					return words.Unknown(fl.F(string(k)))
				}
				hasName = true
				var p *failure.Public
				name, p = s.Str(fl.F("name"))
				return p
			})
		case "custom", "allowed_tools", "name":
			// Members of tool_choice forms this gateway does not support;
			// the type check below names the form.
			otherKeys = string(key)
			p = s.Skip()
		default:
			p = words.Unknown(l.F(string(key)))
		}
		return p
	}); p != nil {
		return nil, l, p
	}
	switch {
	case !hasType:
		return nil, l, words.Missing(l.F("type"))
	case string(typ) != "function":
		return nil, l, words.Bad(l.F("type"), "Invalid value for 'tool_choice.type': '%s'. Only {\"type\": \"function\", \"function\": {\"name\": \"...\"}} is supported by this gateway.", typ)
	case otherKeys != "":
		return nil, l, words.Unknown(l.F(otherKeys))
	case !hasFn:
		return nil, l, words.Missing(fl)
	case !hasName:
		return nil, l, words.Missing(fl.F("name"))
	}
	return &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: name}, fl.F("name"), nil
}

func decodeResponseFormat(s *scanner) (*canonical.ResponseFormat, *failure.Public) {
	l := words.Field("response_format")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var (
		typ       []byte
		hasType   bool
		hasSchema bool
		rf        canonical.ResponseFormat
		hasName   bool
	)
	sl := l.F("json_schema")
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "json_schema":
			hasSchema = true
			hasName, p = decodeJSONSchema(s, sl, &rf)
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
		case !hasName:
			return nil, words.Missing(sl.F("name"))
		}
		rf.Type = canonical.FormatJSONSchema
		return &rf, nil
	}
	return nil, words.Bad(l.F("type"), "Invalid value for 'response_format.type': '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", typ)
}

func decodeJSONSchema(s *scanner, l loc, rf *canonical.ResponseFormat) (hasName bool, _ *failure.Public) {
	if p := s.Object(l); p != nil {
		return false, p
	}
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil || !ok {
			return hasName, p
		}
		switch string(key) {
		case "name":
			hasName = true
			if rf.Name, p = s.Str(l.F("name")); p == nil && !dialect.ValidToolName(rf.Name) {
				p = words.Bad(l.F("name"), "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", l.F("name"))
			}
		case "description":
			_, _, p = s.OptStr(l.F("description"))
		case "schema":
			rf.Schema, p = s.Schema(l.F("schema"))
		case "strict":
			var b *bool
			if b, p = s.OptBool(l.F("strict")); b != nil {
				rf.Strict = *b
			}
		default:
			p = words.Unknown(l.F(string(key)))
		}
		if p != nil {
			return hasName, p
		}
	}
}
