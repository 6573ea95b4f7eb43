package anthropicmsgs

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

// decodeSystem reads the system prompt: a string, or text blocks joined
// with a blank line (the canonical rule for several system texts).
func decodeSystem(s *scanner) (string, *failure.Public) {
	l := words.Field("system")
	switch s.Peek() {
	case 'n':
		return "", s.Literal("null")
	case '"':
		return s.Str(l)
	case '[':
	default:
		return "", s.TypeErr(l, "a valid string or a valid list")
	}
	s.Open()
	var (
		first string
		more  *strings.Builder
	)
	for j := 0; ; j++ {
		ok, p := s.NextElem(j == 0)
		if p != nil {
			return "", p
		}
		if !ok {
			break
		}
		var b block
		if p := b.decode(s, l.At(j), true); p != nil {
			return "", p
		}
		if string(b.typ) != "text" && b.hasType {
			return "", words.Bad(l.At(j).F("type"), "Input should be 'text'")
		}
		if p := b.check(l.At(j), false); p != nil {
			return "", p
		}
		switch {
		case j == 0:
			first = b.text
		case more == nil:
			more = &strings.Builder{}
			more.WriteString(first)
			fallthrough
		default:
			more.WriteString("\n\n")
			more.WriteString(b.text)
		}
	}
	if more != nil {
		return more.String(), nil
	}
	return first, nil
}

func decodeTools(s *scanner) ([]canonical.Tool, *failure.Public) {
	l := words.Field("tools")
	return s.Tools(l, func(at path) (canonical.Tool, *failure.Public) { return decodeTool(s, at) },
		func(path, string) *failure.Public { return words.Bad(l, "Tool names must be unique.") })
}

// decodeTool reads one client tool. Server tools (a type other than
// "custom") are refused: they run at Anthropic, so no other provider of
// the model could honour them. Server tools have members of their own
// (max_uses, ...), so an unknown member is judged once the type is known.
func decodeTool(s *scanner, l path) (canonical.Tool, *failure.Public) {
	var (
		f       fields.Function
		refused []byte
	)
	if p := s.Typed(l, fields.Deferred, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "input_schema":
			// Anthropic's schema must be an object schema (see readSchema).
			f.HasSchema = true
			f.Schema, p = readSchema(s, l.F("input_schema"))
		case "cache_control":
			p = cacheControl(s, l.F("cache_control"))
		case "eager_input_streaming":
			// Only changes how finely arguments are streamed.
			_, _, p = s.MaybeBool(l.F("eager_input_streaming"))
		case "defer_loading", "allowed_callers", "input_examples":
			p = refuse(s, key, &refused)
		default:
			p = s.FunctionMember(&l, key, "input_schema", &f)
		}
		return p
	}, func(typ []byte) *failure.Public {
		if typ != nil && string(typ) != "custom" {
			return words.Unsupported(l, "server tools such as '"+string(typ)+"' run at Anthropic and are not available through every provider of a model")
		}
		return nil
	}); p != nil {
		return canonical.Tool{}, p
	}
	if refused != nil {
		return canonical.Tool{}, words.Unsupported(l.F(string(refused)), "tool search and programmatic tool calling are not available through every provider of a model")
	}
	if p := f.CheckName(&words, &l); p != nil {
		return canonical.Tool{}, p
	}
	if !f.HasSchema {
		return canonical.Tool{}, words.Missing(l.F("input_schema"))
	}
	return f.Tool(), nil
}

// refuse reads a member asking for a feature only Anthropic has, keeping
// the first one given (not null) in refused.
func refuse(s *scanner, key []byte, refused *[]byte) *failure.Public {
	if isNull, p := s.Null(); isNull || p != nil {
		return p
	}
	if *refused == nil {
		*refused = key
	}
	return s.Skip()
}

// readSchema reads an input_schema, kept as raw JSON; its top-level type must
// be "object", as Anthropic requires.
func readSchema(s *scanner, l path) ([]byte, *failure.Public) {
	if s.Peek() != '{' {
		return nil, s.TypeErr(l, "a valid dictionary")
	}
	mark := s.Mark()
	s.Open()
	hasType := false
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return nil, p
		}
		if !ok {
			break
		}
		if string(key) != "type" {
			if p := s.Skip(); p != nil {
				return nil, p
			}
			continue
		}
		hasType = true
		if s.Peek() != '"' {
			return nil, words.Bad(l.F("type"), "Input should be 'object'")
		}
		v, p := s.StrRaw(l.F("type"))
		if p != nil {
			return nil, p
		}
		if string(v) != "object" {
			return nil, words.Bad(l.F("type"), "Input should be 'object'")
		}
	}
	if !hasType {
		return nil, words.Missing(l.F("type"))
	}
	return s.Since(mark), nil
}

// decodeToolChoice reads tool_choice; disable_parallel_tool_use becomes
// canonical ParallelToolCalls (its negation).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, *bool, *failure.Public) {
	l := words.Field("tool_choice")
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, nil, p
	}
	var (
		tc       *canonical.ToolChoice
		name     string
		hasName  bool
		parallel *bool
	)
	if p := s.Typed(l, fields.TypeRequired, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "name":
			hasName = true
			name, p = s.Str(l.F("name"))
		case "disable_parallel_tool_use":
			var off, given bool
			if off, given, p = s.MaybeBool(l.F("disable_parallel_tool_use")); given {
				on := !off
				parallel = &on
			}
		}
		return p
	}, func(typ []byte) *failure.Public {
		var p *failure.Public
		tc, p = toolChoice(l, typ, name, hasName, parallel != nil)
		return p
	}); p != nil {
		return nil, nil, p
	}
	return tc, parallel, nil
}

// toolChoice is the choice at l of type typ; name and parallel are what
// the other members gave.
func toolChoice(l path, typ []byte, name string, hasName, parallel bool) (*canonical.ToolChoice, *failure.Public) {
	var tc canonical.ToolChoice
	switch string(typ) {
	case "auto":
		tc.Mode = canonical.ToolChoiceAuto
	case "any":
		tc.Mode = canonical.ToolChoiceRequired
	case "none":
		tc.Mode = canonical.ToolChoiceNone
		if parallel {
			return nil, words.Unknown(l.F("disable_parallel_tool_use"))
		}
	case "tool":
		if !hasName {
			return nil, words.Missing(l.F("name"))
		}
		tc.Mode, tc.Name = canonical.ToolChoiceTool, name
		return &tc, nil
	default:
		return nil, words.Bad(l.F("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", typ)
	}
	if hasName {
		return nil, words.Unknown(l.F("name"))
	}
	return &tc, nil
}
