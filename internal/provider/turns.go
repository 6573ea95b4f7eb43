package provider

import (
	"errors"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// Turns writes canonical messages as a provider's turns. Anthropic, Bedrock
// and Gemini know only a user and an assistant role, carry tool results as
// blocks of a user turn, and refuse two turns of one role in a row, so
// consecutive messages that map to one role share one turn (consecutive tool
// results become one user turn). What differs between them is named here;
// how a message becomes blocks stays with each provider.
type Turns struct {
	// User is the role of user and tool messages ("user").
	User string
	// Assistant is the role of assistant messages ("assistant"; Gemini's
	// "model").
	Assistant string
	// Blocks is the member holding a turn's blocks ("content"; Gemini's
	// "parts").
	Blocks string
	// Skip, when not nil, leaves out each message it reports true for, so
	// a provider that rejects empty turns never opens one. nil keeps every
	// message.
	Skip func(m *canonical.Message) bool
	// Result writes the block of the tool result msgs[i]; it has the
	// messages before it because Gemini names the function answered,
	// which only the earlier call may know. Required.
	Result func(b []byte, msgs []canonical.Message, i int) []byte
	// Parts writes a message's content parts. Required.
	Parts func(b []byte, parts []canonical.Part) []byte
	// Call writes one tool call of an assistant message, after its
	// parts. Required.
	Call func(b []byte, tc *canonical.ToolCall) ([]byte, error)
}

// Append appends msgs as a JSON array of turns
// ({"role":"…","<Blocks>":[…]}): a tool message as its Result, any other
// as its Parts, then an assistant's calls. An error from Call is returned
// as is.
func (t Turns) Append(b []byte, msgs []canonical.Message) ([]byte, error) {
	b = append(b, '[')
	open := "" // role of the turn being written
	for i := range msgs {
		m := &msgs[i]
		if t.Skip != nil && t.Skip(m) {
			continue
		}
		role := t.User
		if m.Role == canonical.RoleAssistant {
			role = t.Assistant
		}
		if role != open {
			if open != "" {
				b = append(b, "]}"...)
			}
			b = jsonwrite.Sep(b)
			b = append(b, `{"role":"`...)
			b = append(b, role...)
			b = append(b, `","`...)
			b = append(b, t.Blocks...)
			b = append(b, `":[`...)
			open = role
		}
		if m.Role == canonical.RoleTool {
			b = t.Result(b, msgs, i)
			continue
		}
		b = t.Parts(b, m.Content)
		if m.Role != canonical.RoleAssistant {
			continue
		}
		for j := range m.ToolCalls {
			var err error
			if b, err = t.Call(b, &m.ToolCalls[j]); err != nil {
				return nil, err
			}
		}
	}
	if open != "" {
		b = append(b, "]}"...)
	}
	return append(b, ']'), nil
}

// AppendToolUse appends a tool call as Anthropic's Messages and Bedrock's
// Converse both spell it (Converse copies Messages): open, which ends
// ready for the call's id, then its name and its arguments under "input".
// The caller writes the separator before and the closing after, which differ.
func AppendToolUse(b []byte, open string, tc *canonical.ToolCall) ([]byte, error) {
	b = append(b, open...)
	b = jsonwrite.AppendString(b, tc.ID)
	b = append(b, `,"name":`...)
	b = jsonwrite.AppendString(b, tc.Name)
	b = append(b, `,"input":`...)
	return AppendArguments(b, tc.Arguments)
}

// AppendArguments appends a tool call's arguments as a JSON object:
// compacted, or {} when blank, since the providers take the arguments as
// an object and a call without arguments arrives as "".
func AppendArguments(b []byte, args string) ([]byte, error) {
	if strings.TrimSpace(args) == "" {
		return append(b, "{}"...), nil
	}
	b, ok := jsonwrite.AppendCompact(b, []byte(args))
	if !ok {
		return nil, errors.New("tool call arguments are not valid JSON")
	}
	return b, nil
}
