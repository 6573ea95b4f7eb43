package anthropicmsgs

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unsafe"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// turns maps messages[] to canonical messages and enforces what Anthropic
// enforces across them. Anthropic merges consecutive messages of one role
// into one turn, so the tool rules apply per turn: every tool_use of an
// assistant turn needs its tool_result in the next user turn, tool results
// answer only that assistant turn, and they come before any other content
// of their turn.
type turns struct {
	out  []canonical.Message
	role string // role of the current turn, "" before the first message
	// calls are the tool_use blocks of the last assistant turn, until the
	// user turn after it ends; ids finds one by id in constant time.
	calls []call
	ids   dialect.Index
	// sawContent: the current user turn already had a block other than a
	// tool_result.
	sawContent bool
	// emptyAt is the index of an assistant message without content, which
	// only the final message may be; -1 when none.
	emptyAt int

	// One message's content, kept until its role is known: the official
	// SDKs send "content" before "role". blocks is reused across messages.
	str    string
	isStr  bool
	blocks []block

	// Backing arrays for the usual small request, so it costs no growth.
	callBuf  [4]call
	blockBuf [4]block
}

// call is a tool call awaiting its result.
type call struct {
	canonical.ToolCall
	at       int // index of the message it came from
	answered bool
}

func decodeMessages(s *scanner) ([]canonical.Message, *failure.Public) {
	l := words.Field("messages")
	if p := s.Array(l); p != nil {
		return nil, p
	}
	t := &turns{out: make([]canonical.Message, 0, 8), emptyAt: -1}
	t.calls, t.blocks = t.callBuf[:0], t.blockBuf[:0]
	last := -1 // index in out of the final message when it is the assistant's
	n := 0
	for ; ; n++ {
		ok, p := s.NextElem(n == 0)
		if p != nil {
			return nil, p
		}
		if !ok {
			break
		}
		if t.emptyAt >= 0 {
			return nil, nonEmpty(t.emptyAt)
		}
		isAssistant, p := t.message(s, l.At(n), n)
		if p != nil {
			return nil, p
		}
		last = -1
		if isAssistant {
			last = len(t.out) - 1
		}
	}
	if n == 0 {
		return nil, words.Bad(l, "at least one message is required")
	}
	if p := t.endTurn(); p != nil {
		return nil, p
	}
	if t.role == "assistant" && len(t.calls) > 0 {
		return nil, t.unanswered()
	}
	// A final assistant message is a prefill: the answer continues it.
	if last >= 0 {
		m := &t.out[last]
		if len(m.Content) == 0 && len(m.ToolCalls) == 0 {
			// An empty prefill asks for nothing; leaving it out keeps every
			// provider's answer the same.
			t.out = t.out[:last]
			if len(t.out) == 0 {
				return nil, words.Bad(l, "at least one message with content is required")
			}
		} else if k := len(m.Content) - 1; len(m.ToolCalls) == 0 && m.Content[k].Type == canonical.PartText && endsInSpace(m.Content[k].Text) {
			return nil, words.Bad(l, "final assistant content cannot end with trailing whitespace")
		}
	}
	return t.out, nil
}

func nonEmpty(n int) *failure.Public {
	return words.Bad(words.Field("messages").At(n), "all messages must have non-empty content except for the optional final assistant message")
}

func endsInSpace(s string) bool {
	if s == "" {
		return false
	}
	r := rune(s[len(s)-1])
	return r < 0x80 && unicode.IsSpace(r)
}

// message reads one element of messages[] at l (index n).
func (t *turns) message(s *scanner, l path, n int) (isAssistant bool, _ *failure.Public) {
	var (
		role       []byte
		hasRole    bool
		hasContent bool
	)
	if p := s.Fields(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "role":
			hasRole = true
			role, p = s.StrRaw(l.F("role"))
		case "content":
			hasContent = true
			p = t.readContent(s, l.F("content"))
		}
		return p
	}); p != nil {
		return false, p
	}
	switch {
	case !hasRole:
		return false, words.Missing(l.F("role"))
	case string(role) != "user" && string(role) != "assistant":
		return false, words.Bad(l.F("role"), "Input should be 'user' or 'assistant'")
	case !hasContent:
		return false, words.Missing(l.F("content"))
	}
	r := "user"
	if string(role) == "assistant" {
		r = "assistant"
	}
	if r != t.role {
		if p := t.endTurn(); p != nil {
			return false, p
		}
		if r == "assistant" {
			t.calls = t.calls[:0]
			t.ids.Reset()
		}
		t.role, t.sawContent = r, false
	}
	return r == "assistant", t.apply(l.F("content"), n, r == "assistant")
}

// readContent reads a message's content without judging it: which blocks
// are allowed depends on the role.
func (t *turns) readContent(s *scanner, l path) *failure.Public {
	switch s.Peek() {
	case '"':
		var p *failure.Public
		t.isStr = true
		t.str, p = s.Str(l)
		return p
	case '[':
	default:
		return s.TypeErr(l, "a valid string or a valid list")
	}
	s.Open()
	t.isStr, t.blocks = false, t.blocks[:0]
	for j := 0; ; j++ {
		ok, p := s.NextElem(j == 0)
		if p != nil || !ok {
			return p
		}
		t.blocks = append(t.blocks, block{})
		if p := t.blocks[j].decode(s, l.At(j), false); p != nil {
			return p
		}
	}
}

// endTurn closes the current turn: after a user turn, every tool call of
// the assistant turn before it must have had its result.
func (t *turns) endTurn() *failure.Public {
	if t.role != "user" || len(t.calls) == 0 {
		return nil
	}
	for k := range t.calls {
		if !t.calls[k].answered {
			return t.unanswered()
		}
	}
	t.calls = t.calls[:0]
	t.ids.Reset()
	return nil
}

func (t *turns) unanswered() *failure.Public {
	var ids []string
	first := -1
	for _, c := range t.calls {
		if !c.answered {
			ids = append(ids, c.ID)
			if first < 0 {
				first = c.at
			}
		}
	}
	return words.Bad(words.Field("messages").At(first), "`tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", strings.Join(ids, ", "))
}

// apply judges the content read for message n and appends its canonical
// messages: one assistant message, or, for a user message, one tool
// message per tool_result (in order) and then one user message with the
// other blocks.
func (t *turns) apply(l path, n int, isAssistant bool) *failure.Public {
	var m canonical.Message
	m.Role = canonical.RoleUser
	if isAssistant {
		m.Role = canonical.RoleAssistant
	}
	if t.isStr {
		if t.str != "" {
			m.Content = []canonical.Part{canonical.TextPart(t.str)}
		}
	} else {
		// One allocation for the message's parts.
		parts := 0
		for j := range t.blocks {
			if k := t.blocks[j].kind; k == kindText || k == kindImage || k == kindThinking || k == kindRedacted {
				parts++
			}
		}
		if parts > 0 {
			m.Content = make([]canonical.Part, 0, parts)
		}
		for j := range t.blocks {
			b := &t.blocks[j]
			if p := b.check(l.At(j), isAssistant); p != nil {
				return p
			}
			switch b.kind {
			case kindText:
				m.Content = append(m.Content, canonical.TextPart(b.text))
			case kindImage:
				m.Content = append(m.Content, b.image)
			case kindThinking:
				// Carried unchanged to the family that signed it.
				sig, fam := dialect.DecodeSignature(b.signature)
				m.Content = append(m.Content, canonical.Part{Type: canonical.PartThinking, Text: b.thinking, Signature: sig, Family: fam})
			case kindRedacted:
				data, fam := dialect.DecodeSignature(b.data)
				m.Content = append(m.Content, canonical.Part{Type: canonical.PartRedactedThinking, Data: data, Family: fam})
			case kindToolUse:
				if _, dup := t.ids.Add(b.id); dup {
					return words.Bad(l.At(j).F("id"), "`tool_use` ids must be unique: '%s' is used twice", b.id)
				}
				tc := canonical.ToolCall{ID: b.id, Name: b.name, Arguments: b.input}
				m.ToolCalls = append(m.ToolCalls, tc)
				t.calls = append(t.calls, call{ToolCall: tc, at: n})
			case kindToolResult:
				if t.sawContent || len(m.Content) > 0 {
					return words.Bad(l.At(j), "`tool_result` blocks must come first in a user turn, before any text or image")
				}
				name, p := t.answer(b.id, l.At(j))
				if p != nil {
					return p
				}
				t.out = append(t.out, canonical.Message{Role: canonical.RoleTool, Content: b.result, ToolCallID: b.id, ToolName: name, IsError: b.isError})
			}
		}
	}
	switch {
	case isAssistant:
		if len(m.Content) == 0 && len(m.ToolCalls) == 0 {
			t.emptyAt = n // allowed only as the final message
		}
		t.out = append(t.out, m)
	case len(m.Content) > 0:
		t.sawContent = true
		t.out = append(t.out, m)
	case t.isStr || len(t.blocks) == 0:
		return nonEmpty(n)
	}
	return nil
}

// answer marks the call id as answered and returns its tool's name.
func (t *turns) answer(id string, l path) (string, *failure.Public) {
	if k, ok := t.ids.Find(id); ok {
		c := &t.calls[k]
		if c.answered {
			return "", words.Bad(l.F("tool_use_id"), "`tool_use` id '%s' already has a `tool_result` block", id)
		}
		c.answered = true
		return c.Name, nil
	}
	return "", words.Bad(l.F("tool_use_id"), "unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", id)
}

type blockKind uint8

const (
	kindText blockKind = iota + 1
	kindImage
	kindToolUse
	kindToolResult
	kindThinking
	kindRedacted
)

// Members a block may have; which are allowed depends on its type.
const (
	mText = 1 << iota
	mCitations
	mSource
	mID
	mName
	mInput
	mToolUseID
	mContent
	mIsError
	mCacheControl
	mThinking
	mSignature
	mData
)

var memberNames = [...]string{"text", "citations", "source", "id", "name", "input", "tool_use_id", "content", "is_error", "cache_control",
	"thinking", "signature", "data"}

var allowedMembers = [...]int{
	kindText:       mText | mCitations | mCacheControl,
	kindImage:      mSource | mCacheControl,
	kindToolUse:    mID | mName | mInput | mCacheControl,
	kindToolResult: mToolUseID | mContent | mIsError | mCacheControl,
	kindThinking:   mThinking | mSignature | mCacheControl,
	kindRedacted:   mData | mCacheControl,
}

// block is one decoded content block. Members may come in any order (the
// official SDKs send "type" last), so they are collected first and checked
// against the type after.
type block struct {
	typ     []byte
	hasType bool
	kind    blockKind
	members int
	// unknown is the first member no supported block has; refused the
	// first member of a supported block that the gateway refuses.
	unknown, refused []byte

	text      string
	citations bool // non-empty citations
	image     canonical.Part
	id, name  string
	input     string
	result    []canonical.Part
	isError   bool
	// thinking, signature, data: a thinking or redacted_thinking block's.
	thinking, signature, data string
}

// decode reads the block's members and its type. A member that does not
// fit its expected shape is reported only if the type is one the gateway
// takes: a refused or unknown type is the better answer. nested is set
// inside a tool_result's content, where blocks have no content of their
// own; it bounds recursion.
func (b *block) decode(s *scanner, l path, nested bool) *failure.Public {
	if s.Peek() != '{' {
		return s.TypeErr(l, "a valid dictionary")
	}
	start := s.Mark()
	p := b.readMembers(s, l, nested)
	if p == nil || s.IsSyntax(p) {
		if p == nil {
			p = b.judgeType(l)
		}
		return p
	}
	// Off the happy path: find the type by reading the block again.
	s.Rewind(start)
	b.typ, b.hasType = nil, false
	if tp := b.readType(s, l); tp != nil {
		return tp
	}
	if tp := b.judgeType(l); tp != nil {
		return tp
	}
	return p
}

func (b *block) readMembers(s *scanner, l path, nested bool) *failure.Public {
	s.Open()
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil {
			return p
		}
		if !ok {
			return nil
		}
		switch string(key) {
		case "type":
			b.hasType = true
			b.typ, p = s.StrRaw(l.F("type"))
		case "text":
			b.members |= mText
			b.text, p = s.Str(l.F("text"))
		case "citations":
			b.members |= mCitations
			b.citations, p = nonEmptyList(s, l.F("citations"))
		case "cache_control":
			b.members |= mCacheControl
			p = cacheControl(s, l.F("cache_control"))
		case "source":
			b.members |= mSource
			b.image, p = decodeSource(s, l.F("source"))
		case "id":
			b.members |= mID
			b.id, p = s.Str(l.F("id"))
		case "name":
			b.members |= mName
			b.name, p = s.Str(l.F("name"))
		case "input":
			b.members |= mInput
			b.input, p = input(s, l.F("input"))
		case "tool_use_id":
			b.members |= mToolUseID
			b.id, p = s.Str(l.F("tool_use_id"))
		case "content":
			b.members |= mContent
			if nested {
				p = s.Skip()
				break
			}
			b.result, p = decodeResultContent(s, l.F("content"))
		case "is_error":
			b.members |= mIsError
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			b.isError, p = s.Bool(l.F("is_error"))
		case "thinking":
			b.members |= mThinking
			b.thinking, p = s.Str(l.F("thinking"))
		case "signature":
			b.members |= mSignature
			b.signature, p = s.Str(l.F("signature"))
		case "data":
			b.members |= mData
			b.data, p = s.Str(l.F("data"))
		case "caller":
			// Who called a tool: {"type":"direct"} (the model itself) is what
			// every tool_use the API returns carries, and SDKs echo it back;
			// a code-execution caller belongs to Anthropic's server tools.
			var direct bool
			if direct, p = directCaller(s, l.F("caller")); p == nil && !direct && b.refused == nil {
				b.refused = key
			}
		case "toolset_name", "transformations":
			// Members of supported blocks for features the gateway refuses
			// unless they are null.
			if isNull, np := s.Null(); isNull || np != nil {
				p = np
				break
			}
			if b.refused == nil {
				b.refused = key
			}
			p = s.Skip()
		default:
			if b.unknown == nil {
				b.unknown = key
			}
			p = s.Skip()
		}
		if p != nil {
			return p
		}
	}
}

// readType reads only the block's type, skipping every other member.
func (b *block) readType(s *scanner, l path) *failure.Public {
	s.Open()
	for first := true; ; first = false {
		key, ok, p := s.NextKey(first)
		if p != nil || !ok {
			return p
		}
		if string(key) == "type" {
			b.hasType = true
			if b.typ, p = s.StrRaw(l.F("type")); p != nil {
				return p
			}
			continue
		}
		if p := s.Skip(); p != nil {
			return p
		}
	}
}

// judgeType sets the block's kind, or refuses its type.
func (b *block) judgeType(l path) *failure.Public {
	tl := l.F("type")
	if !b.hasType {
		return words.Missing(tl)
	}
	switch string(b.typ) {
	case "text":
		b.kind = kindText
	case "image":
		b.kind = kindImage
	case "tool_use":
		b.kind = kindToolUse
	case "tool_result":
		b.kind = kindToolResult
	case "thinking":
		b.kind = kindThinking
	case "redacted_thinking":
		b.kind = kindRedacted
	case "document", "search_result", "container_upload":
		return words.Unsupported(l, "'"+string(b.typ)+"' blocks are not available through every provider of a model")
	case "tool_reference":
		return words.Unsupported(l, "tool search is not available through every provider of a model")
	case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
		"bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result":
		return words.Unsupported(l, "Anthropic's server-side tools are not available through every provider of a model")
	default:
		return words.Bad(tl, "Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'", b.typ)
	}
	return nil
}

// check applies the block's type, already judged: which members it needs
// and allows, and where it may appear.
func (b *block) check(l path, isAssistant bool) *failure.Public {
	if b.unknown != nil {
		return words.Unknown(l.F(string(b.unknown)))
	}
	if b.refused != nil {
		return words.Unsupported(l.F(string(b.refused)), "the feature it belongs to is not available through every provider of a model")
	}
	if bad := b.members &^ allowedMembers[b.kind]; bad != 0 {
		for k, name := range memberNames {
			if bad&(1<<k) != 0 {
				return words.Unknown(l.F(name))
			}
		}
	}
	tl := l.F("type")
	switch b.kind {
	case kindText:
		switch {
		case b.members&mText == 0:
			return words.Missing(l.F("text"))
		case b.text == "":
			return words.Bad(l.F("text"), "text content blocks must be non-empty")
		case b.citations && !isAssistant:
			// In a user turn citations point into documents the caller
			// supplies, which not every provider takes (2026-10-21 refuses
			// them there outright). On an assistant turn they annotate text
			// the model already wrote, echoed back: dropped.
			return words.Unsupported(l.F("citations"), "citations point into documents, which are not available through every provider")
		}
	case kindImage:
		switch {
		case b.members&mSource == 0:
			return words.Missing(l.F("source"))
		case isAssistant:
			return words.Bad(tl, "image blocks are only allowed in user messages")
		}
	case kindToolUse:
		switch {
		case !isAssistant:
			return words.Bad(tl, "tool_use blocks are only allowed in assistant messages")
		case b.members&mID == 0:
			return words.Missing(l.F("id"))
		case b.id == "":
			return words.Bad(l.F("id"), "String should have at least 1 character")
		case b.members&mName == 0:
			return words.Missing(l.F("name"))
		case b.name == "":
			return words.Bad(l.F("name"), "String should have at least 1 character")
		case b.members&mInput == 0:
			return words.Missing(l.F("input"))
		}
	case kindToolResult:
		switch {
		case isAssistant:
			return words.Bad(tl, "tool_result blocks are only allowed in user messages")
		case b.members&mToolUseID == 0:
			return words.Missing(l.F("tool_use_id"))
		}
	case kindThinking:
		switch {
		case !isAssistant:
			return words.Bad(tl, "thinking blocks are only allowed in assistant messages")
		case b.members&mThinking == 0:
			return words.Missing(l.F("thinking"))
		case b.members&mSignature == 0:
			return words.Missing(l.F("signature"))
		}
	case kindRedacted:
		switch {
		case !isAssistant:
			return words.Bad(tl, "redacted_thinking blocks are only allowed in assistant messages")
		case b.members&mData == 0:
			return words.Missing(l.F("data"))
		}
	}
	return nil
}

// nonEmptyList reads an optional array and reports whether it has an
// element.
func nonEmptyList(s *scanner, l path) (bool, *failure.Public) {
	if isNull, p := s.Null(); isNull || p != nil {
		return false, p
	}
	if p := s.Array(l); p != nil {
		return false, p
	}
	n := 0
	for ; ; n++ {
		ok, p := s.NextElem(n == 0)
		if p != nil {
			return false, p
		}
		if !ok {
			return n > 0, nil
		}
		if p := s.Skip(); p != nil {
			return false, p
		}
	}
}

// input reads a tool_use input object as compact JSON text, the form of
// canonical tool-call arguments.
func input(s *scanner, l path) (string, *failure.Public) {
	if s.Peek() != '{' {
		return "", s.TypeErr(l, "a valid dictionary")
	}
	raw, p := s.Raw()
	if p != nil {
		return "", p
	}
	if bytes.IndexAny(raw, " \t\r\n") < 0 {
		return alias(raw), nil // already compact: share the body copy
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		// The scanner accepted it, so encoding/json must too.
		return "", words.Bad(l, "Input should be a valid dictionary")
	}
	return alias(buf.Bytes()), nil
}

// alias views b as a string without copying; b is never written again.
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// decodeSource reads an image source.
func decodeSource(s *scanner, l path) (canonical.Part, *failure.Public) {
	var none canonical.Part
	var (
		typ, media []byte
		data, url  string
		hasType    bool
		unknown    []byte
		has        [4]bool // media_type, data, url, file_id
	)
	if p := s.Members(l, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			typ, p = s.StrRaw(l.F("type"))
		case "media_type":
			has[0] = true
			media, p = s.StrRaw(l.F("media_type"))
		case "data":
			has[1] = true
			data, p = s.Str(l.F("data"))
		case "url":
			has[2] = true
			url, p = s.Str(l.F("url"))
		case "file_id":
			has[3] = true
			p = s.Skip()
		default:
			if unknown == nil {
				unknown = key
			}
			p = s.Skip()
		}
		return p
	}); p != nil {
		return none, p
	}
	// only checks that the source has no member of another source type.
	only := func(allowed [4]bool) *failure.Public {
		names := [...]string{"media_type", "data", "url", "file_id"}
		for k := range names {
			if has[k] && !allowed[k] {
				return words.Unknown(l.F(names[k]))
			}
		}
		if unknown != nil {
			return words.Unknown(l.F(string(unknown)))
		}
		return nil
	}
	if !hasType {
		return none, words.Missing(l.F("type"))
	}
	switch string(typ) {
	case "base64":
		if p := only([4]bool{true, true, false, false}); p != nil {
			return none, p
		}
		switch {
		case !has[0]:
			return none, words.Missing(l.F("media_type"))
		case !has[1]:
			return none, words.Missing(l.F("data"))
		}
		switch string(media) {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return none, words.Bad(l.F("media_type"), "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'")
		}
		if !dialect.IsBase64(data) {
			return none, words.Bad(l.F("data"), "Input should be valid base64 data")
		}
		return canonical.Part{Type: canonical.PartImage, MediaType: alias(media), Data: data}, nil
	case "url":
		if p := only([4]bool{false, false, true, false}); p != nil {
			return none, p
		}
		if !has[2] {
			return none, words.Missing(l.F("url"))
		}
		if (!dialect.HasPrefixFold(url, "https://") && !dialect.HasPrefixFold(url, "http://")) || len(url) <= len("https://") && strings.HasSuffix(url, "//") {
			return none, words.Bad(l.F("url"), "Input should be an http(s) URL")
		}
		return canonical.Part{Type: canonical.PartImage, ImageURL: url}, nil
	case "file":
		return none, words.Unsupported(l, "images uploaded with Anthropic's Files API are not available through every provider; send them inline or by URL")
	}
	return none, words.Bad(l.F("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'", typ)
}

// decodeResultContent reads a tool_result's content: a string or text
// blocks. Images are refused: not every provider takes them in a tool
// result, and some would drop them silently.
func decodeResultContent(s *scanner, l path) ([]canonical.Part, *failure.Public) {
	switch s.Peek() {
	case 'n':
		return nil, s.Literal("null")
	case '"':
		text, p := s.Str(l)
		if p != nil || text == "" {
			return nil, p
		}
		return []canonical.Part{canonical.TextPart(text)}, nil
	case '[':
	default:
		return nil, s.TypeErr(l, "a valid string or a valid list")
	}
	s.Open()
	var parts []canonical.Part
	if _, p := s.Items(func(j int) *failure.Public {
		text, p := resultText(s, l.At(j))
		parts = append(parts, canonical.TextPart(text))
		return p
	}); p != nil {
		return nil, p
	}
	return parts, nil
}

// resultText reads a tool result's content block at bl: text only, as
// every provider takes it.
func resultText(s *scanner, bl path) (string, *failure.Public) {
	var b block
	if p := b.decode(s, bl, true); p != nil {
		return "", p
	}
	switch b.kind {
	case kindImage:
		return "", words.Unsupported(bl, "images in tool results are not accepted by every provider")
	case kindToolUse, kindToolResult:
		return "", words.Bad(bl.F("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document', 'tool_reference'", b.typ)
	}
	if p := b.check(bl, false); p != nil {
		return "", p
	}
	return b.text, nil
}
