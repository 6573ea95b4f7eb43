package catalog

import (
	"bytes"
	"encoding/json"
	"errors"

	"go.yaml.in/yaml/v3"
)

// A config written as JSON (a subset of YAML, and what generators of big
// routing tables write) is read by encoding/json into the same node tree
// the YAML parser builds, lines included: several times faster than the
// YAML parser on a large file, with the same strict decoding and the same
// line-numbered problems.

// looksJSON reports whether data is a JSON object document.
func looksJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// jsonNode parses a JSON document into a yaml.Node tree. ok is false when
// the document is not valid JSON: the caller then lets the YAML parser
// read it (YAML accepts more, e.g. comments) and report its own errors.
// A hand-written scanner: encoding/json's Token API costs more than the
// YAML parser it is here to beat.
func jsonNode(data []byte) (root *yaml.Node, ok bool) {
	if !json.Valid(data) {
		return nil, false
	}
	s := &jsonScanner{data: data, line: 1}
	n, err := s.value(0)
	if err != nil {
		return nil, false
	}
	s.space()
	if s.pos != len(data) {
		return nil, false
	}
	return n, true
}

// maxJSONDepth bounds nesting (json.Valid has no bound; our recursion does).
const maxJSONDepth = 256

// jsonScanner reads a document json.Valid accepted, tracking lines.
type jsonScanner struct {
	data []byte
	pos  int
	line int
}

func (s *jsonScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		s.pos++
	}
}

var errJSON = errors.New("not a JSON document this scanner reads")

func (s *jsonScanner) value(depth int) (*yaml.Node, error) {
	if depth > maxJSONDepth {
		return nil, errJSON
	}
	s.space()
	if s.pos >= len(s.data) {
		return nil, errJSON
	}
	line := s.line
	switch c := s.data[s.pos]; {
	case c == '{':
		s.pos++
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
		for {
			s.space()
			if s.pos < len(s.data) && s.data[s.pos] == '}' {
				s.pos++
				return n, nil
			}
			if len(n.Content) > 0 {
				if s.data[s.pos] != ',' {
					return nil, errJSON
				}
				s.pos++
				s.space()
			}
			kl := s.line
			key, err := s.str()
			if err != nil {
				return nil, err
			}
			s.space()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return nil, errJSON
			}
			s.pos++
			v, err := s.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: kl}, v)
		}
	case c == '[':
		s.pos++
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: line}
		for {
			s.space()
			if s.pos < len(s.data) && s.data[s.pos] == ']' {
				s.pos++
				return n, nil
			}
			if len(n.Content) > 0 {
				if s.data[s.pos] != ',' {
					return nil, errJSON
				}
				s.pos++
			}
			v, err := s.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
	case c == '"':
		v, err := s.str()
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle, Line: line}, nil
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [...]struct{ word, tag string }{{"true", "!!bool"}, {"false", "!!bool"}, {"null", "!!null"}} {
			if bytes.HasPrefix(s.data[s.pos:], []byte(lit.word)) {
				s.pos += len(lit.word)
				return &yaml.Node{Kind: yaml.ScalarNode, Tag: lit.tag, Value: lit.word, Line: line}, nil
			}
		}
		return nil, errJSON
	default: // a number (json.Valid vouched for its syntax)
		start, tag := s.pos, "!!int"
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '.', 'e', 'E':
				tag = "!!float"
			case '-', '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			default:
				return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(s.data[start:s.pos]), Line: line}, nil
			}
			s.pos++
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(s.data[start:s.pos]), Line: line}, nil
	}
}

// str reads a string at pos; escapes go through encoding/json.
func (s *jsonScanner) str() (string, error) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return "", errJSON
	}
	start := s.pos
	escaped := false
	for s.pos++; s.pos < len(s.data); s.pos++ {
		switch s.data[s.pos] {
		case '\\':
			escaped = true
			s.pos++
		case '"':
			s.pos++
			raw := s.data[start:s.pos]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", errJSON
			}
			return v, nil
		}
	}
	return "", errJSON
}
