package openaichat

import (
	"encoding/json"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

func decodeTools(s *scanner) ([]canonical.Tool, *failure.Public) {
	l := field("tools")
	if isNull, p := s.skipNull(); isNull || p != nil {
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
			break
		}
		t, p := decodeTool(s, l.At(i))
		if p != nil {
			return nil, p
		}
		if _, dup := names.Add(t.Name); dup {
			nl := l.At(i).F("function").F("name")
			return nil, bad(nl, "Invalid '%s': duplicate function name '%s'; tool names must be unique.", nl, t.Name)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, bad(l, "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	return out, nil
}

func decodeTool(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	if p := s.object(l); p != nil {
		return t, p
	}
	var hasType, hasFn bool
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
			var typ []byte
			if typ, p = s.getStringRaw(l.F("type")); p == nil && string(typ) != "function" {
				p = bad(l.F("type"), "Invalid value for '%s': '%s'. Only 'function' tools are supported by this gateway.", l.F("type"), typ)
			}
		case "function":
			hasFn = true
			t, p = decodeFunction(s, l.F("function"))
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return t, p
		}
	}
	switch {
	case !hasType:
		return t, missing(l.F("type"))
	case !hasFn:
		return t, missing(l.F("function"))
	}
	return t, nil
}

func decodeFunction(s *scanner, l loc) (t canonical.Tool, _ *failure.Public) {
	if p := s.object(l); p != nil {
		return t, p
	}
	hasName := false
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return t, p
		}
		if !ok {
			break
		}
		switch string(key) {
		case "name":
			hasName = true
			if t.Name, p = s.getString(l.F("name")); p == nil && !dialect.ValidToolName(t.Name) {
				p = bad(l.F("name"), "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", l.F("name"))
			}
		case "description":
			if isNull, np := s.skipNull(); isNull || np != nil {
				p = np
				break
			}
			t.Description, p = s.getString(l.F("description"))
		case "parameters":
			t.Parameters, p = s.schema(l.F("parameters"))
		case "strict":
			var b *bool
			if b, p = s.optBool(l.F("strict")); b != nil {
				t.Strict = *b
			}
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return t, p
		}
	}
	if !hasName {
		return t, missing(l.F("name"))
	}
	return t, nil
}

// schema reads a JSON Schema kept as raw JSON: an object, or null for none.
func (s *scanner) schema(l loc) (json.RawMessage, *failure.Public) {
	if isNull, p := s.skipNull(); isNull || p != nil {
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
		return nil, l, bad(l, "Invalid value for 'tool_choice': '%s'. Supported values are: 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": \"...\"}}.", v)
	case '{':
	default:
		return nil, l, s.typeErr(l, "a string or an object")
	}
	s.Open()
	var (
		typ       []byte
		name      string
		hasType   bool
		hasName   bool
		hasFn     bool
		otherKeys string
	)
	fl := l.F("function")
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
			typ, p = s.getStringRaw(l.F("type"))
		case "function":
			hasFn = true
			if p = s.object(fl); p != nil {
				break
			}
			for first := true; ; first = false {
				var k []byte
				if k, ok, p = s.NextKey(first); p != nil || !ok {
					break
				}
				if string(k) != "name" {
					p = unrecognized(fl.F(string(k)))
					break
				}
				hasName = true
				name, p = s.getString(fl.F("name"))
				if p != nil {
					break
				}
			}
		case "custom", "allowed_tools", "name":
			// Members of tool_choice forms this gateway does not support;
			// the type check below names the form.
			otherKeys = string(key)
			p = s.Skip()
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return nil, l, p
		}
	}
	switch {
	case !hasType:
		return nil, l, missing(l.F("type"))
	case string(typ) != "function":
		return nil, l, bad(l.F("type"), "Invalid value for 'tool_choice.type': '%s'. Only {\"type\": \"function\", \"function\": {\"name\": \"...\"}} is supported by this gateway.", typ)
	case otherKeys != "":
		return nil, l, unrecognized(l.F(otherKeys))
	case !hasFn:
		return nil, l, missing(fl)
	case !hasName:
		return nil, l, missing(fl.F("name"))
	}
	return &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: name}, fl.F("name"), nil
}

func decodeResponseFormat(s *scanner) (*canonical.ResponseFormat, *failure.Public) {
	l := field("response_format")
	if isNull, p := s.skipNull(); isNull || p != nil {
		return nil, p
	}
	if p := s.object(l); p != nil {
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
			typ, p = s.getStringRaw(l.F("type"))
		case "json_schema":
			hasSchema = true
			hasName, p = decodeJSONSchema(s, sl, &rf)
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
		if hasSchema {
			return nil, bad(sl, "Invalid parameter: 'response_format.json_schema' is only allowed when 'response_format.type' is 'json_schema'.")
		}
		if string(typ) == "text" {
			return nil, nil // plain text is the canonical default
		}
		return &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, nil
	case "json_schema":
		switch {
		case !hasSchema:
			return nil, missing(sl)
		case !hasName:
			return nil, missing(sl.F("name"))
		}
		rf.Type = canonical.FormatJSONSchema
		return &rf, nil
	}
	return nil, bad(l.F("type"), "Invalid value for 'response_format.type': '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", typ)
}

func decodeJSONSchema(s *scanner, l loc, rf *canonical.ResponseFormat) (hasName bool, _ *failure.Public) {
	if p := s.object(l); p != nil {
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
			if rf.Name, p = s.getString(l.F("name")); p == nil && !dialect.ValidToolName(rf.Name) {
				p = bad(l.F("name"), "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", l.F("name"))
			}
		case "description":
			p = s.optString(l.F("description"))
		case "schema":
			rf.Schema, p = s.schema(l.F("schema"))
		case "strict":
			var b *bool
			if b, p = s.optBool(l.F("strict")); b != nil {
				rf.Strict = *b
			}
		default:
			p = unrecognized(l.F(string(key)))
		}
		if p != nil {
			return hasName, p
		}
	}
}
