package openairesponses

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// members of an input item, as bits, so the rules of each item type are a
// mask checked once the type is known (SDKs send "type" last).
const (
	mType uint16 = 1 << iota
	mRole
	mContent
	mID
	mStatus
	mPhase
	mCallID
	mName
	mArguments
	mOutput
	mSummary
	mEncrypted
	mParsedArgs
)

var memberNames = [...]string{"type", "role", "content", "id", "status", "phase", "call_id", "name", "arguments", "output", "summary", "encrypted_content", "parsed_arguments"}

// allowed members per item type.
const (
	allowMessage   = mType | mRole | mContent | mID | mStatus | mPhase
	allowCall      = mType | mCallID | mName | mArguments | mID | mStatus | mParsedArgs
	allowCallOut   = mType | mCallID | mOutput | mID | mStatus
	allowReasoning = mType | mID | mSummary | mContent | mEncrypted | mStatus
)

// contentValue is a message's content or a call output: a string, or the
// raw text of a parts array, read once the item's type is known.
type contentValue struct {
	text  string
	parts []byte // nil for a string
}

func readContentValue(s *scanner, l loc) (v contentValue, p *failure.Public) {
	switch s.Peek() {
	case '"':
		v.text, p = s.Str(l)
	case '[':
		v.parts, p = s.Raw()
	default:
		p = s.TypeErr(l, "a string or an array of content parts")
	}
	return v, p
}

// item is one element of input[] as read, before its type's rules apply.
type inputItem struct {
	seen    uint16
	other   string // the first member no item type has
	typ     []byte
	role    []byte
	content contentValue
	output  contentValue
	callID  string
	name    string
	args    string
	// summary and encrypted: a reasoning item's summary text (joined) and
	// encrypted_content.
	summary   string
	encrypted string
}

// pendingCall is a function call of the current assistant turn awaiting
// its function_call_output.
type pendingCall struct {
	id, name string
	at       int // input index, for errors
	answered bool
}

// conversation builds canonical messages from input items.
type conversation struct {
	// thinking holds reasoning items waiting for the assistant turn they
	// precede.
	thinking []canonical.Part
	out      []canonical.Message
	system   strings.Builder
	calls    []pendingCall
	// ids finds a pending call by id in constant time.
	ids dialect.Index
	// extend is true while the last message is an assistant turn that
	// following function_call items join (Responses splits one turn into a
	// message item and function_call items).
	extend bool
}

// decodeInput reads input: a string (one user message) or an array of
// items. System and developer messages are lifted into the returned system
// text, in order. reasoning items spillway handed out join the assistant
// turn after them; others are dropped: they hold another service's
// encrypted reasoning, which no rung can read, and the visible
// conversation is complete without them.
func decodeInput(s *scanner) (system string, _ []canonical.Message, _ *failure.Public) {
	l := words.Field("input")
	switch s.Peek() {
	case '"':
		text, p := s.Str(l)
		if p == nil && text == "" {
			p = notEmpty(l)
		}
		if p != nil {
			return "", nil, p
		}
		return "", []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(text)}}}, nil
	case '[':
	default:
		return "", nil, s.TypeErr(l, "a string or an array of input items")
	}
	s.Open()
	c := conversation{out: make([]canonical.Message, 0, 4)}
	if p := s.NonEmpty(l, func(n int) *failure.Public {
		var it inputItem
		if p := it.read(s, l.At(n)); p != nil {
			return p
		}
		return c.add(&it, l.At(n), n)
	}); p != nil {
		return "", nil, p
	}
	if p := c.closeCalls(); p != nil {
		return "", nil, p
	}
	return c.system.String(), c.out, nil
}

// read scans one item's members, checking each value's JSON type.
func (it *inputItem) read(s *scanner, il loc) *failure.Public {
	p := s.Members(il, func(key []byte) (p *failure.Public) {
		// Literal names keep loc from pinning a copy of the key.
		switch string(key) {
		case "type":
			it.seen |= mType
			it.typ, p = s.StrRaw(il.F("type"))
		case "role":
			it.seen |= mRole
			it.role, p = s.StrRaw(il.F("role"))
		case "content":
			it.seen |= mContent
			it.content, p = readContentValue(s, il.F("content"))
		case "output":
			it.seen |= mOutput
			it.output, p = readContentValue(s, il.F("output"))
		case "id":
			it.seen |= mID
			_, _, p = s.OptStr(il.F("id"))
		case "status":
			it.seen |= mStatus
			_, p = s.OptEnum(il.F("status"), "in_progress", "completed", "incomplete")
		case "phase":
			it.seen |= mPhase
			_, p = s.OptEnum(il.F("phase"), "commentary", "final_answer")
		case "call_id":
			it.seen |= mCallID
			it.callID, p = s.Str(il.F("call_id"))
		case "name":
			it.seen |= mName
			it.name, p = s.Str(il.F("name"))
		case "arguments":
			it.seen |= mArguments
			it.args, p = s.Str(il.F("arguments"))
		case "summary":
			it.seen |= mSummary
			it.summary, p = summary(s, il.F("summary"))
		case "encrypted_content":
			it.seen |= mEncrypted
			it.encrypted, _, p = s.OptStr(il.F("encrypted_content"))
		case "parsed_arguments":
			// The SDK helpers' parse of arguments, echoed with the output.
			it.seen |= mParsedArgs
			p = s.Skip()
		default:
			if it.other == "" {
				it.other = string(key)
			}
			p = s.Skip()
		}
		return p
	})
	return p
}

// check reports the first member the item's type does not allow.
func (it *inputItem) check(il loc, allow uint16) *failure.Public {
	if it.other != "" {
		return words.Unknown(il.F(it.other))
	}
	if extra := it.seen &^ allow; extra != 0 {
		for b, name := range memberNames {
			if extra&(1<<b) != 0 {
				return words.Bad(il.F(name), "Invalid parameter: '%s' is not allowed on an input item of type '%s'.", il.F(name), it.kind())
			}
		}
	}
	return nil
}

// kind is the item's type; an item without one is a message.
func (it *inputItem) kind() string {
	if it.seen&mType == 0 {
		return "message"
	}
	return string(it.typ)
}

// add applies one item to the conversation.
func (c *conversation) add(it *inputItem, il loc, n int) *failure.Public {
	tl := il.F("type")
	switch it.kind() {
	case "message":
		if p := it.check(il, allowMessage); p != nil {
			return p
		}
		return c.message(it, il)
	case "function_call":
		if p := it.check(il, allowCall); p != nil {
			return p
		}
		return c.call(it, il, n)
	case "function_call_output":
		if p := it.check(il, allowCallOut); p != nil {
			return p
		}
		return c.callOutput(it, il)
	case "reasoning":
		if p := it.check(il, allowReasoning); p != nil {
			return p
		}
		if it.seen&mID == 0 {
			return words.Missing(il.F("id"))
		}
		if it.seen&mSummary == 0 {
			return words.Missing(il.F("summary"))
		}
		// Reasoning spillway handed out goes back, unchanged, to the
		// provider family that signed it, with the assistant turn that
		// follows; anything else is another service's reasoning, which no
		// rung can read: dropped, see decodeInput.
		part, ok := dialect.ReadReasoning(it.encrypted, it.summary)
		switch {
		case !ok:
		case c.extend:
			// Inside an assistant turn (after its message item): it
			// belongs to that turn, before its text.
			last := &c.out[len(c.out)-1]
			last.Content = append([]canonical.Part{part}, last.Content...)
		default:
			c.thinking = append(c.thinking, part)
		}
		return nil
	case "item_reference":
		return words.Bad(tl, "Invalid value for '%s': 'item_reference'. %s, not references to stored items.", tl, stateless)
	case "":
		return notEmpty(tl)
	}
	return words.Bad(tl, "Invalid value for '%s': '%s'. spillway accepts 'message', 'function_call', 'function_call_output' and 'reasoning' items; built-in tool items are not supported.", tl, it.typ)
}

func (c *conversation) message(it *inputItem, il loc) *failure.Public {
	rl := il.F("role")
	if it.seen&mRole == 0 {
		return words.Missing(rl)
	}
	if it.seen&mContent == 0 {
		return words.Missing(il.F("content"))
	}
	role := string(it.role)
	switch role {
	case "user", "system", "developer", "assistant":
	default:
		return words.Bad(rl, "Invalid value for '%s': '%s'. Supported values are: 'user', 'assistant', 'system' and 'developer'.", rl, it.role)
	}
	parts, p := decodeContent(it.content, role, il.F("content"))
	if p != nil {
		return p
	}
	if role == "system" || role == "developer" {
		// Lifted out of the conversation; it does not end a tool turn.
		if c.system.Len() > 0 {
			c.system.WriteString("\n\n")
		}
		for _, part := range parts {
			c.system.WriteString(part.Text)
		}
		return nil
	}
	if p := c.closeCalls(); p != nil {
		return p
	}
	r := canonical.RoleUser
	if role == "assistant" {
		r = canonical.RoleAssistant
		parts = c.takeThinking(parts)
	} else {
		c.thinking = c.thinking[:0] // reasoning no assistant turn followed
	}
	c.out = append(c.out, canonical.Message{Role: r, Content: parts})
	c.extend = r == canonical.RoleAssistant
	return nil
}

func (c *conversation) call(it *inputItem, il loc, n int) *failure.Public {
	switch {
	case it.seen&mCallID == 0:
		return words.Missing(il.F("call_id"))
	case it.callID == "":
		return notEmpty(il.F("call_id"))
	case it.seen&mName == 0:
		return words.Missing(il.F("name"))
	case it.name == "":
		return notEmpty(il.F("name"))
	case it.seen&mArguments == 0:
		return words.Missing(il.F("arguments"))
	}
	if !c.extend {
		// A call after tool results starts a new assistant turn, which
		// needs every earlier call answered first.
		if p := c.closeCalls(); p != nil {
			return p
		}
	}
	if _, dup := c.ids.Add(it.callID); dup {
		return words.Bad(il.F("call_id"), "Invalid value for '%s': duplicate function call id '%s'.", il.F("call_id"), it.callID)
	}
	args := it.args
	if args == "" {
		args = "{}"
	}
	tc := canonical.ToolCall{ID: it.callID, Name: it.name, Arguments: args}
	if c.extend {
		last := &c.out[len(c.out)-1]
		last.ToolCalls = append(last.ToolCalls, tc)
	} else {
		c.out = append(c.out, canonical.Message{Role: canonical.RoleAssistant, Content: c.takeThinking(nil), ToolCalls: []canonical.ToolCall{tc}})
		c.extend = true
	}
	c.calls = append(c.calls, pendingCall{id: it.callID, name: it.name, at: n})
	return nil
}

func (c *conversation) callOutput(it *inputItem, il loc) *failure.Public {
	cl := il.F("call_id")
	switch {
	case it.seen&mCallID == 0:
		return words.Missing(cl)
	case it.callID == "":
		return notEmpty(cl)
	case it.seen&mOutput == 0:
		return words.Missing(il.F("output"))
	}
	k, found := c.ids.Find(it.callID)
	switch {
	case !found:
		return words.Bad(cl, "No tool call found for function call output with call_id %s (%s): a 'function_call_output' must follow the 'function_call' item it answers.", it.callID, cl)
	case c.calls[k].answered:
		return words.Bad(cl, "Invalid value for '%s': function call '%s' already has an output.", cl, it.callID)
	}
	parts, p := decodeOutput(it.output, il.F("output"))
	if p != nil {
		return p
	}
	c.calls[k].answered = true
	c.out = append(c.out, canonical.Message{Role: canonical.RoleTool, Content: parts, ToolCallID: it.callID, ToolName: c.calls[k].name})
	c.extend = false
	return nil
}

// takeThinking puts the pending reasoning before parts.
func (c *conversation) takeThinking(parts []canonical.Part) []canonical.Part {
	if len(c.thinking) == 0 {
		return parts
	}
	out := append(append(make([]canonical.Part, 0, len(c.thinking)+len(parts)), c.thinking...), parts...)
	c.thinking = c.thinking[:0]
	return out
}

// closeCalls ends the current tool turn: every call must have its output,
// as OpenAI and the other providers require.
func (c *conversation) closeCalls() *failure.Public {
	for _, pc := range c.calls {
		if !pc.answered {
			l := words.Field("input").At(pc.at)
			return words.Bad(l, "No tool output found for function call %s (%s): send a 'function_call_output' item with its call_id after the 'function_call' items.", pc.id, l)
		}
	}
	c.calls = c.calls[:0]
	c.ids.Reset()
	return nil
}

// summary reads a reasoning item's summary: summary_text parts, whose
// texts are joined.
func summary(s *scanner, l loc) (string, *failure.Public) {
	if s.Peek() != '[' {
		return "", s.TypeErr(l, "an array")
	}
	s.Open()
	var b strings.Builder
	for i := 0; ; i++ {
		ok, p := s.NextElem(i == 0)
		if p != nil || !ok {
			return b.String(), p
		}
		pl := l.At(i)
		if p := s.Object(pl); p != nil {
			return "", p
		}
		for first := true; ; first = false {
			key, ok, p := s.NextKey(first)
			if p != nil {
				return "", p
			}
			if !ok {
				break
			}
			switch string(key) {
			case "text":
				t, p := s.Str(pl.F("text"))
				if p != nil {
					return "", p
				}
				b.WriteString(t)
			case "type":
				if _, p := s.OptEnum(pl.F("type"), "summary_text"); p != nil {
					return "", p
				}
			default:
				if p := s.Skip(); p != nil {
					return "", p
				}
			}
		}
	}
}
