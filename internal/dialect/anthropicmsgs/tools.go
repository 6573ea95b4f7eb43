package anthropicmsgs

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
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
// the model could honour them.
func decodeTool(s *scanner, l path) (t canonical.Tool, _ *failure.Public) {
	var (
		typ                []byte
		hasName, hasSchema bool
		unknown            []byte
		refused            []byte
	)
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			typ, p = s.StrRaw(l.F("type"))
		case "name":
			hasName = true
			t.Name, p = s.Str(l.F("name"))
		case "description":
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			t.Description, p = s.Str(l.F("description"))
		case "input_schema":
			hasSchema = true
			t.Parameters, p = readSchema(s, l.F("input_schema"))
		case "strict":
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			t.Strict, p = s.Bool(l.F("strict"))
		case "cache_control":
			p = cacheControl(s, l.F("cache_control"))
		case "eager_input_streaming":
			// Only changes how finely arguments are streamed.
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			_, p = s.Bool(l.F("eager_input_streaming"))
		case "defer_loading", "allowed_callers", "input_examples":
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			if refused == nil {
				refused = key
			}
			p = s.Skip()
		default:
			// Server tools have members of their own (max_uses, ...): judge
			// them once the type is known.
			if unknown == nil {
				unknown = key
			}
			p = s.Skip()
		}
		return p
	}); p != nil {
		return t, p
	}
	switch {
	case typ != nil && string(typ) != "custom":
		return t, words.Unsupported(l, "server tools such as '"+string(typ)+"' run at Anthropic and are not available through every provider of a model")
	case unknown != nil:
		return t, words.Unknown(l.F(string(unknown)))
	case refused != nil:
		return t, words.Unsupported(l.F(string(refused)), "tool search and programmatic tool calling are not available through every provider of a model")
	case !hasName:
		return t, words.Missing(l.F("name"))
	case !dialect.ValidToolName(t.Name):
		return t, words.Bad(l.F("name"), "String should match pattern '^[a-zA-Z0-9_-]{1,64}$'")
	case !hasSchema:
		return t, words.Missing(l.F("input_schema"))
	}
	return t, nil
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
		typ      []byte
		hasType  bool
		name     string
		hasName  bool
		parallel *bool
	)
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "name":
			hasName = true
			name, p = s.Str(l.F("name"))
		case "disable_parallel_tool_use":
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			var off bool
			if off, p = s.Bool(l.F("disable_parallel_tool_use")); p == nil {
				on := !off
				parallel = &on
			}
		default:
			p = words.Unknown(l.F(string(key)))
		}
		return p
	}); p != nil {
		return nil, nil, p
	}
	if !hasType {
		return nil, nil, words.Missing(l.F("type"))
	}
	var tc canonical.ToolChoice
	switch string(typ) {
	case "auto":
		tc.Mode = canonical.ToolChoiceAuto
	case "any":
		tc.Mode = canonical.ToolChoiceRequired
	case "none":
		tc.Mode = canonical.ToolChoiceNone
		if parallel != nil {
			return nil, nil, words.Unknown(l.F("disable_parallel_tool_use"))
		}
	case "tool":
		if !hasName {
			return nil, nil, words.Missing(l.F("name"))
		}
		tc.Mode, tc.Name = canonical.ToolChoiceTool, name
		return &tc, parallel, nil
	default:
		return nil, nil, words.Bad(l.F("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", typ)
	}
	if hasName {
		return nil, nil, words.Unknown(l.F("name"))
	}
	return &tc, parallel, nil
}
