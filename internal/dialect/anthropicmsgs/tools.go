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
	l := field("system")
	switch s.Peek() {
	case 'n':
		return "", s.Literal("null")
	case '"':
		return s.Str()
	case '[':
	default:
		return "", s.typeErr(l, "a valid string or a valid list")
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
		if p := b.decode(s, l.at(j), true); p != nil {
			return "", p
		}
		if string(b.typ) != "text" && b.hasType {
			return "", bad(l.at(j).f("type"), "Input should be 'text'")
		}
		if p := b.check(l.at(j), false); p != nil {
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
		t, p := decodeTool(s, l.at(i))
		if p != nil {
			return nil, p
		}
		if _, dup := names.Add(t.Name); dup {
			return nil, bad(l, "Tool names must be unique.")
		}
		out = append(out, t)
	}
}

// decodeTool reads one client tool. Server tools (a type other than
// "custom") are refused: they run at Anthropic, so no other provider of
// the model could honour them.
func decodeTool(s *scanner, l path) (t canonical.Tool, _ *failure.Public) {
	if p := s.object(l); p != nil {
		return t, p
	}
	var (
		typ                []byte
		hasName, hasSchema bool
		unknown            []byte
		refused            []byte
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
			if isNull, np := s.null(); isNull || np != nil {
				p = np
				break
			}
			typ, p = s.getRaw(l.f("type"))
		case "name":
			hasName = true
			t.Name, p = s.getString(l.f("name"))
		case "description":
			if isNull, np := s.null(); isNull || np != nil {
				p = np
				break
			}
			t.Description, p = s.getString(l.f("description"))
		case "input_schema":
			hasSchema = true
			t.Parameters, p = s.schema(l.f("input_schema"))
		case "strict":
			if isNull, np := s.null(); isNull || np != nil {
				p = np
				break
			}
			t.Strict, p = s.getBool(l.f("strict"))
		case "cache_control":
			p = s.cacheControl(l.f("cache_control"))
		case "eager_input_streaming":
			// Only changes how finely arguments are streamed.
			if isNull, np := s.null(); isNull || np != nil {
				p = np
				break
			}
			_, p = s.getBool(l.f("eager_input_streaming"))
		case "defer_loading", "allowed_callers", "input_examples":
			if isNull, np := s.null(); isNull || np != nil {
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
		if p != nil {
			return t, p
		}
	}
	switch {
	case typ != nil && string(typ) != "custom":
		return t, unsupported(l, "server tools such as '"+string(typ)+"' run at Anthropic and are not available through every provider of a model")
	case unknown != nil:
		return t, extra(l.f(string(unknown)))
	case refused != nil:
		return t, unsupported(l.f(string(refused)), "tool search and programmatic tool calling are not available through every provider of a model")
	case !hasName:
		return t, missing(l.f("name"))
	case !dialect.ValidToolName(t.Name):
		return t, bad(l.f("name"), "String should match pattern '^[a-zA-Z0-9_-]{1,64}$'")
	case !hasSchema:
		return t, missing(l.f("input_schema"))
	}
	return t, nil
}

// schema reads an input_schema, kept as raw JSON; its top-level type must
// be "object", as Anthropic requires.
func (s *scanner) schema(l path) ([]byte, *failure.Public) {
	if s.Peek() != '{' {
		return nil, s.typeErr(l, "a valid dictionary")
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
			return nil, bad(l.f("type"), "Input should be 'object'")
		}
		v, p := s.RawString()
		if p != nil {
			return nil, p
		}
		if string(v) != "object" {
			return nil, bad(l.f("type"), "Input should be 'object'")
		}
	}
	if !hasType {
		return nil, missing(l.f("type"))
	}
	return s.Since(mark), nil
}

// decodeToolChoice reads tool_choice; disable_parallel_tool_use becomes
// canonical ParallelToolCalls (its negation).
func decodeToolChoice(s *scanner) (*canonical.ToolChoice, *bool, *failure.Public) {
	l := field("tool_choice")
	if isNull, p := s.null(); isNull || p != nil {
		return nil, nil, p
	}
	if p := s.object(l); p != nil {
		return nil, nil, p
	}
	var (
		typ      []byte
		hasType  bool
		name     string
		hasName  bool
		parallel *bool
	)
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return nil, nil, p
		}
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.getRaw(l.f("type"))
		case "name":
			hasName = true
			name, p = s.getString(l.f("name"))
		case "disable_parallel_tool_use":
			if isNull, np := s.null(); isNull || np != nil {
				p = np
				break
			}
			var off bool
			if off, p = s.getBool(l.f("disable_parallel_tool_use")); p == nil {
				on := !off
				parallel = &on
			}
		default:
			p = extra(l.f(string(key)))
		}
		if p != nil {
			return nil, nil, p
		}
	}
	if !hasType {
		return nil, nil, missing(l.f("type"))
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
			return nil, nil, extra(l.f("disable_parallel_tool_use"))
		}
	case "tool":
		if !hasName {
			return nil, nil, missing(l.f("name"))
		}
		tc.Mode, tc.Name = canonical.ToolChoiceTool, name
		return &tc, parallel, nil
	default:
		return nil, nil, bad(l.f("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", typ)
	}
	if hasName {
		return nil, nil, extra(l.f("name"))
	}
	return &tc, parallel, nil
}
