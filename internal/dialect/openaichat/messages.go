package openaichat

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// message is one decoded element of messages[] before its role's rules
// are applied (members may come in any order).
type message struct {
	role       string
	content    []canonical.Part
	hasContent bool // present and not null
	// imageAt and refusalAt are the first content parts of those types, -1
	// when none: which part types are allowed depends on the role.
	imageAt, refusalAt int
	toolCalls          []canonical.ToolCall
	toolCallID         string
	hasToolCallID      bool
	refusal            string
	hasRefusal         bool
	// emptyList: content was [] (an error unless tool calls stand beside it).
	emptyList bool
	// echoAt names the first response-only member an SDK echoes back with
	// an assistant message (annotations, parsed, reasoning_content); they
	// are accepted there and dropped.
	echoAt string
}

// toolWindow tracks the tool calls of the last assistant message until every
// one has its result, which OpenAI and other providers require.
type toolWindow struct {
	at       int // message index of the assistant turn
	calls    []canonical.ToolCall
	answered []bool
	// ids finds a call by id in constant time.
	ids dialect.Index
}

func (w *toolWindow) close() *failure.Public {
	var ids []string
	for k, done := range w.answered {
		if !done {
			ids = append(ids, w.calls[k].ID)
		}
	}
	w.calls, w.answered = nil, w.answered[:0]
	w.ids.Reset()
	if ids != nil {
		l := words.Field("messages").At(w.at).F("tool_calls")
		return words.Bad(l, "Invalid parameter: the assistant message with '%s' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", l, strings.Join(ids, ", "))
	}
	return nil
}

func decodeMessages(s *scanner) (string, []canonical.Message, *failure.Public) {
	l := words.Field("messages")
	if p := s.Array(l); p != nil {
		return "", nil, p
	}
	c := conversation{out: make([]canonical.Message, 0, 4)}
	if p := s.NonEmpty(l, func(n int) *failure.Public { return c.read(s, l.At(n), n) }); p != nil {
		return "", nil, p
	}
	if c.w.calls != nil {
		if p := c.w.close(); p != nil {
			return "", nil, p
		}
	}
	return c.system, c.out, nil
}

// conversation is what the messages read so far make: the system text,
// the canonical messages, and the tool calls still waiting for results.
type conversation struct {
	system string
	out    []canonical.Message
	w      toolWindow
}

// read reads message n, at ml, and takes it in. System and developer
// messages join the system text.
func (c *conversation) read(s *scanner, ml loc, n int) *failure.Public {
	var m message
	if p := m.decode(s, ml); p != nil {
		return p
	}
	if p := m.check(ml); p != nil {
		return p
	}
	if m.role != "tool" && c.w.calls != nil {
		if p := c.w.close(); p != nil {
			return p
		}
	}
	switch m.role {
	case "system", "developer":
		text := joinText(m.content)
		if c.system != "" {
			c.system += "\n\n" + text
		} else {
			c.system = text
		}
		return nil
	case "tool":
		name, p := c.w.answer(m.toolCallID, ml)
		if p != nil {
			return p
		}
		c.out = append(c.out, canonical.Message{Role: canonical.RoleTool, Content: m.content, ToolCallID: m.toolCallID, ToolName: name})
		return nil
	case "user":
		c.out = append(c.out, canonical.Message{Role: canonical.RoleUser, Content: m.content})
		return nil
	}
	if m.hasRefusal && m.refusal != "" {
		m.content = append(m.content, canonical.TextPart(m.refusal))
	}
	c.out = append(c.out, canonical.Message{Role: canonical.RoleAssistant, Content: m.content, ToolCalls: m.toolCalls})
	if len(m.toolCalls) > 0 {
		c.w.at, c.w.calls = n, m.toolCalls
		for _, tc := range m.toolCalls {
			c.w.answered = append(c.w.answered, false)
			c.w.ids.Add(tc.ID)
		}
	}
	return nil
}

// answer marks the call id as answered and returns its function name.
func (w *toolWindow) answer(id string, ml loc) (string, *failure.Public) {
	if w.calls == nil {
		return "", words.Bad(ml.F("role"), "Invalid parameter: '%s': messages with role 'tool' must be a response to a preceding message with 'tool_calls'.", ml.F("role"))
	}
	if k, ok := w.ids.Find(id); ok {
		if w.answered[k] {
			return "", words.Bad(ml.F("tool_call_id"), "Invalid parameter: '%s': tool call '%s' already has a response message.", ml.F("tool_call_id"), id)
		}
		w.answered[k] = true
		return w.calls[k].Name, nil
	}
	return "", words.Bad(ml.F("tool_call_id"), "Invalid value for '%s': '%s' does not match any 'tool_calls' id of the preceding assistant message.", ml.F("tool_call_id"), id)
}

func joinText(parts []canonical.Part) string {
	if len(parts) == 1 {
		return parts[0].Text
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (m *message) decode(s *scanner, ml loc) *failure.Public {
	m.imageAt, m.refusalAt = -1, -1
	p := s.Members(ml, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "role":
			m.role, p = s.Str(ml.F("role"))
		case "content":
			p = m.decodeContent(s, ml.F("content"))
		case "name":
			_, _, p = s.OptStr(ml.F("name"))
		case "tool_calls":
			m.toolCalls, p = decodeToolCalls(s, ml.F("tool_calls"))
		case "tool_call_id":
			m.hasToolCallID = true
			m.toolCallID, p = s.Str(ml.F("tool_call_id"))
		case "refusal":
			var isNull bool
			if isNull, p = s.Null(); !isNull && p == nil {
				m.hasRefusal = true
				m.refusal, p = s.Str(ml.F("refusal"))
			}
		case "function_call":
			p = s.RejectUnlessNull(ml.F("function_call"), "it is deprecated; use 'tool_calls'")
		case "audio":
			p = s.RejectUnlessNull(ml.F("audio"), "audio output is not supported")
		case "annotations", "parsed", "reasoning_content":
			// What the SDKs echo from a response message: citations of the
			// text, the SDK's own parse of it, reasoning a gateway returned.
			// None changes what the model is asked; all are dropped.
			if m.echoAt == "" {
				m.echoAt = string(key)
			}
			p = s.Skip()
		default:
			p = words.Unknown(ml.F(string(key)))
		}
		return p
	})
	return p
}

// check applies the rules of the message's role.
func (m *message) check(ml loc) *failure.Public {
	cl := ml.F("content")
	if m.emptyList && (m.role != "assistant" || len(m.toolCalls) == 0) {
		return words.EmptyArray(cl)
	}
	switch m.role {
	case "":
		return words.Missing(ml.F("role"))
	case "system", "developer", "user", "tool":
		if !m.hasContent {
			return words.Missing(cl)
		}
		if m.refusalAt >= 0 {
			return words.Bad(cl.At(m.refusalAt).F("type"), "Invalid value for '%s': 'refusal' content parts are only allowed in assistant messages.", cl.At(m.refusalAt).F("type"))
		}
		if m.imageAt >= 0 && m.role != "user" {
			return words.Bad(cl.At(m.imageAt).F("type"), "Invalid value for '%s': 'image_url' content parts are only allowed in user messages.", cl.At(m.imageAt).F("type"))
		}
	case "assistant":
		if !m.hasContent && len(m.toolCalls) == 0 && !m.hasRefusal {
			return words.Bad(cl, "Invalid value for '%s': an assistant message needs 'content' unless it has 'tool_calls'.", cl)
		}
		if m.imageAt >= 0 {
			return words.Bad(cl.At(m.imageAt).F("type"), "Invalid value for '%s': 'image_url' content parts are only allowed in user messages.", cl.At(m.imageAt).F("type"))
		}
	case "function":
		return words.Bad(ml.F("role"), "Invalid value for '%s': the 'function' role is deprecated and not supported; send function results as 'tool' messages.", ml.F("role"))
	default:
		return words.Bad(ml.F("role"), "Invalid value for '%s': '%s'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.", ml.F("role"), m.role)
	}
	if m.role == "tool" {
		if !m.hasToolCallID {
			return words.Missing(ml.F("tool_call_id"))
		}
		if m.toolCallID == "" {
			return words.Bad(ml.F("tool_call_id"), "Invalid value for '%s': it must not be empty.", ml.F("tool_call_id"))
		}
	} else if m.hasToolCallID {
		return words.Bad(ml.F("tool_call_id"), "Invalid parameter: '%s' is only allowed on messages with role 'tool'.", ml.F("tool_call_id"))
	}
	if m.role != "assistant" {
		if m.echoAt != "" {
			return words.Unknown(ml.F(m.echoAt))
		}
		if m.toolCalls != nil {
			return words.Bad(ml.F("tool_calls"), "Invalid parameter: '%s' is only allowed on messages with role 'assistant'.", ml.F("tool_calls"))
		}
		if m.hasRefusal {
			return words.Bad(ml.F("refusal"), "Invalid parameter: '%s' is only allowed on messages with role 'assistant'.", ml.F("refusal"))
		}
	}
	return nil
}

func (m *message) decodeContent(s *scanner, cl loc) *failure.Public {
	switch s.Peek() {
	case 'n':
		m.hasContent, m.content = false, nil
		return s.Literal("null")
	case '"':
		text, p := s.Str(cl)
		m.hasContent, m.content = true, []canonical.Part{canonical.TextPart(text)}
		return p
	case '[':
	default:
		return s.TypeErr(cl, "a string, an array of content parts or null")
	}
	s.Open()
	m.hasContent, m.content, m.imageAt, m.refusalAt = true, nil, -1, -1
	for j := 0; ; j++ {
		ok, p := s.NextElem(j == 0)
		if p != nil {
			return p
		}
		if !ok {
			if j == 0 {
				// Judged by check: beside tool calls an empty list is no
				// content (LangChain sends one), elsewhere an error.
				m.hasContent, m.emptyList = false, true
			}
			return nil
		}
		part, isRefusal, p := decodePart(s, cl.At(j))
		if p != nil {
			return p
		}
		if part.Type == canonical.PartImage && m.imageAt < 0 {
			m.imageAt = j
		}
		if isRefusal && m.refusalAt < 0 {
			m.refusalAt = j
		}
		m.content = append(m.content, part)
	}
}

// decodePart reads one content part. A refusal part (assistant history)
// becomes text: the canonical form has no refusal part, and the refusal is
// what the assistant said.
func decodePart(s *scanner, pl loc) (part canonical.Part, isRefusal bool, _ *failure.Public) {
	var (
		typ                 []byte
		text, refusal       string
		hasText, hasRefusal bool
		hasImage            bool
		other               string // an input_audio or file member
		url                 string
		hasURL              bool
	)
	if p := s.Members(pl, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			typ, p = s.StrRaw(pl.F("type"))
		case "text":
			hasText = true
			text, p = s.Str(pl.F("text"))
		case "refusal":
			hasRefusal = true
			refusal, p = s.Str(pl.F("refusal"))
		case "image_url":
			hasImage = true
			url, hasURL, p = decodeImageURL(s, pl.F("image_url"))
		case "input_audio", "file":
			other = string(key)
			p = s.Skip()
		default:
			p = words.Unknown(pl.F(string(key)))
		}
		return p
	}); p != nil {
		return part, false, p
	}
	tl := pl.F("type")
	extra := func(name string) *failure.Public {
		return words.Bad(pl.F(name), "Invalid parameter: '%s' is not allowed on a content part of type '%s'.", pl.F(name), typ)
	}
	switch string(typ) {
	case "":
		if typ == nil {
			return part, false, words.Missing(tl)
		}
	case "text":
		switch {
		case !hasText:
			return part, false, words.Missing(pl.F("text"))
		case hasRefusal:
			return part, false, extra("refusal")
		case hasImage:
			return part, false, extra("image_url")
		case other != "":
			return part, false, extra(other)
		}
		return canonical.TextPart(text), false, nil
	case "refusal":
		switch {
		case !hasRefusal:
			return part, false, words.Missing(pl.F("refusal"))
		case hasText:
			return part, false, extra("text")
		case hasImage:
			return part, false, extra("image_url")
		case other != "":
			return part, false, extra(other)
		}
		return canonical.TextPart(refusal), true, nil
	case "image_url":
		switch {
		case !hasImage:
			return part, false, words.Missing(pl.F("image_url"))
		case !hasURL:
			return part, false, words.Missing(pl.F("image_url").F("url"))
		case hasText:
			return part, false, extra("text")
		case hasRefusal:
			return part, false, extra("refusal")
		case other != "":
			return part, false, extra(other)
		}
		part, p := imagePart(url, pl.F("image_url").F("url"))
		return part, false, p
	case "input_audio", "file":
		return part, false, words.Bad(tl, "'%s' content parts are not supported by this gateway (%s); send text or 'image_url' parts.", typ, tl)
	}
	return part, false, words.Bad(tl, "Invalid value for '%s': '%s'. Supported values are: 'text', 'image_url' and, in assistant messages, 'refusal'.", tl, typ)
}

func decodeImageURL(s *scanner, l loc) (url string, hasURL bool, _ *failure.Public) {
	if p := s.Object(l); p != nil {
		return "", false, p
	}
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil || !ok {
			return url, hasURL, p
		}
		switch string(key) {
		case "url":
			hasURL = true
			url, p = s.Str(l.F("url"))
		case "detail":
			// auto|low|high tunes the provider's image cost; no canonical
			// counterpart, so the value is checked and ignored.
			var d []byte
			if d, p = s.StrRaw(l.F("detail")); p == nil {
				switch string(d) {
				case "auto", "low", "high":
				default:
					p = words.Bad(l.F("detail"), "Invalid value for '%s': '%s'. Supported values are: 'auto', 'low' and 'high'.", l.F("detail"), d)
				}
			}
		default:
			p = words.Unknown(l.F(string(key)))
		}
		if p != nil {
			return "", false, p
		}
	}
}

// imagePart reads an image_url value (see dialect.ImageURLPart).
func imagePart(url string, l loc) (canonical.Part, *failure.Public) {
	part, problem := dialect.ImageURLPart(url)
	if problem != "" {
		return part, words.Bad(l, "Invalid '%s': %s.", l, problem)
	}
	return part, nil
}

// decodeToolCalls reads an assistant message's tool_calls.
func decodeToolCalls(s *scanner, l loc) ([]canonical.ToolCall, *failure.Public) {
	var ids dialect.Index // unique ids, checked in constant time
	if isNull, p := s.Null(); isNull || p != nil {
		return nil, p
	}
	var out []canonical.ToolCall
	if p := s.Elements(l, func(j int) *failure.Public {
		tc, p := decodeToolCall(s, l.At(j))
		if p != nil {
			return p
		}
		if _, dup := ids.Add(tc.ID); dup {
			return words.Bad(l.At(j).F("id"), "Invalid value for '%s': duplicate tool call id '%s'.", l.At(j).F("id"), tc.ID)
		}
		out = append(out, tc)
		return nil
	}); p != nil {
		return nil, p
	}
	return out, nil
}

func decodeToolCall(s *scanner, l loc) (tc canonical.ToolCall, _ *failure.Public) {
	var hasID, hasType, hasFn, hasName, hasArgs bool
	fl := l.F("function")
	if p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "id":
			hasID = true
			tc.ID, p = s.Str(l.F("id"))
		case "type":
			hasType = true
			p = functionType(s, l.F("type"), "tool calls are supported")
		case "function":
			hasFn = true
			hasName, hasArgs, p = decodeCallFunction(s, fl, &tc)
		}
		return p
	}); p != nil {
		return tc, p
	}
	switch {
	case !hasID:
		return tc, words.Missing(l.F("id"))
	case tc.ID == "":
		return tc, words.Bad(l.F("id"), "Invalid value for '%s': it must not be empty.", l.F("id"))
	case !hasType:
		return tc, words.Missing(l.F("type"))
	case !hasFn:
		return tc, words.Missing(l.F("function"))
	case !hasName:
		return tc, words.Missing(l.F("function").F("name"))
	case tc.Name == "":
		return tc, words.Bad(l.F("function").F("name"), "Invalid value for '%s': it must not be empty.", l.F("function").F("name"))
	case !hasArgs:
		return tc, words.Missing(l.F("function").F("arguments"))
	}
	if tc.Arguments == "" {
		tc.Arguments = "{}"
	}
	return tc, nil
}

// decodeCallFunction reads a tool call's function at fl into tc, and
// reports which of name and arguments it had.
func decodeCallFunction(s *scanner, fl loc, tc *canonical.ToolCall) (hasName, hasArgs bool, _ *failure.Public) {
	p := s.Fields(fl, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "name":
			hasName = true
			tc.Name, p = s.Str(fl.F("name"))
		case "parsed_arguments":
			// The SDK helpers' parse of arguments, echoed back.
			p = s.Skip()
		case "arguments":
			hasArgs = true
			tc.Arguments, p = s.Str(fl.F("arguments"))
		}
		return p
	})
	return hasName, hasArgs, p
}

// functionType reads the type of a tool or tool call at tl, which must be
// "function"; what names the objects in the error.
func functionType(s *scanner, tl loc, what string) *failure.Public {
	typ, p := s.StrRaw(tl)
	if p == nil && string(typ) != "function" {
		p = words.Bad(tl, "Invalid value for '%s': '%s'. Only 'function' %s.", tl, typ, what)
	}
	return p
}
