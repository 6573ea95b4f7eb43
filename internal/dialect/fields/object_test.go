package fields

import (
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Typed reports a member's own error, then an absent type, then check's
// verdict, then a deferred unknown member, in that order; Fields reports an
// unknown member at once.
func TestTypedOrder(t *testing.T) {
	l := testWords.Field("o")
	wantA := func(typ []byte) *failure.Public {
		if string(typ) != "a" {
			return testWords.Bad(l.F("type"), "bad type %s", typ)
		}
		return nil
	}
	tests := []struct {
		body string
		how  Typing
		want string
	}{
		{`{"type":"a","n":1}`, TypeRequired, ""},
		{`{"n":1}`, TypeRequired, "required o.type"},
		{`{"n":1}`, 0, "bad type "},
		{`{"type":null,"n":1}`, 0, "bad type "},
		{`{"type":null}`, TypeRequired, "type o.type want S got null"},
		{`{"x":1,"type":"b"}`, TypeRequired, "unknown o.x"},
		{`{"x":1,"type":"b"}`, TypeRequired | Deferred, "bad type b"},
		{`{"x":1,"y":2,"type":"a"}`, TypeRequired | Deferred, "unknown o.x"},
		{`{"x":1,"n":"s"}`, TypeRequired | Deferred, "type o.n want I got a string"},
		{`{"x":1}`, TypeRequired | Deferred, "required o.type"},
	}
	for _, tt := range tests {
		r := New([]byte(tt.body), &testWords)
		p := r.Typed(l, tt.how, func(key []byte) (p *failure.Public) {
			if string(key) == "n" {
				_, p = r.Int(l.F("n"))
			}
			return p
		}, wantA)
		if got := message(p); got != tt.want {
			t.Errorf("Typed(%s, %b) = %q, want %q", tt.body, tt.how, got, tt.want)
		}
	}
	r := New([]byte(`{"name":"f","z":1}`), &testWords)
	var f Function
	p := r.Fields(l, func(key []byte) *failure.Public { return r.FunctionMember(&l, key, "schema", &f) })
	if message(p) != "unknown o.z" || f.Name != "f" || !f.HasName {
		t.Errorf("Fields: %q, %+v", message(p), f)
	}
}

// FunctionMember reads the members every dialect's function has, and
// CheckName words a missing or refused name by the table.
func TestFunction(t *testing.T) {
	w := testWords
	w.Pattern = "pattern %[1]s"
	l := w.Field("f")
	r := New([]byte(`{"name":"get weather","description":null,"strict":true,"params":{"type":"object"},"other":1}`), &w)
	var f Function
	p := r.Members(l, func(key []byte) *failure.Public {
		if string(key) == "other" {
			return r.Skip() // FunctionMember leaves it unread
		}
		return r.FunctionMember(&l, key, "params", &f)
	})
	if p != nil || !f.HasName || !f.HasDescription || !f.HasStrict || !f.HasSchema || !f.Strict || string(f.Schema) != `{"type":"object"}` {
		t.Fatalf("FunctionMember: %+v, %+v", p, f)
	}
	if got := message(f.CheckName(&w, &l)); got != "pattern f.name" {
		t.Errorf("CheckName of a name with a space: %q", got)
	}
	if got := message((&Function{}).CheckName(&w, &l)); got != "required f.name" {
		t.Errorf("CheckName without a name: %q", got)
	}
	f.Name = "get_weather"
	if tool := f.Tool(); tool.Name != "get_weather" || !tool.Strict || tool.Parameters == nil {
		t.Errorf("Tool: %+v", tool)
	}
	if rf := f.Format(); rf.Type != canonical.FormatJSONSchema || rf.Name != "get_weather" || !rf.Strict {
		t.Errorf("Format: %+v", rf)
	}
}

// ToolChoice reads the mode strings itself and leaves the named form to
// the dialect, which says where the name was.
func TestToolChoice(t *testing.T) {
	named := func(r *Reader) func(p Path) (string, Path, *failure.Public) {
		return func(p Path) (string, Path, *failure.Public) {
			var f Function
			e := r.Fields(p, func(key []byte) *failure.Public { return r.NameMember(&p, key, &f) })
			return f.Name, p.F("name"), e
		}
	}
	tests := []struct{ body, want, at string }{
		{`null`, "<nil>", "tool_choice"},
		{`"required"`, "required", "tool_choice"},
		{`{"name":"f"}`, "tool f", "tool_choice.name"},
		{`{"x":1}`, "unknown tool_choice.x", "tool_choice"},
		{`"any"`, "Invalid value for 'tool_choice': 'any'. Supported values are: 'none', 'auto', 'required' or FORM.", "tool_choice"},
		{`1`, "type tool_choice want a string or an object got a number", "tool_choice"},
	}
	for _, tt := range tests {
		r := New([]byte(tt.body), &testWords)
		tc, at, p := r.ToolChoice("FORM", named(&r))
		got := message(p)
		switch {
		case p != nil:
		case tc == nil:
			got = "<nil>"
		case tc.Mode == canonical.ToolChoiceTool:
			got = "tool " + tc.Name
		default:
			got = string(tc.Mode)
		}
		if got != tt.want || at.String() != tt.at {
			t.Errorf("ToolChoice(%s) = %q at %s, want %q at %s", tt.body, got, at, tt.want, tt.at)
		}
	}
}

func message(p *failure.Public) string {
	if p == nil {
		return ""
	}
	return p.Message
}

// Enum lists the values allowed in the table's words and joiner.
func TestEnum(t *testing.T) {
	w := testWords
	w.Enum, w.Or = "enum %[1]s %[2]s: %[3]s", " or "
	l := w.Field("e")
	tests := []struct{ body, want, err string }{
		{`"b"`, "b", ""},
		{`null`, "", ""},
		{`"x"`, "", "enum e x: 'a', 'b' or 'c'"},
		{`1`, "", "type e want S got a number"},
	}
	for _, tt := range tests {
		r := New([]byte(tt.body), &w)
		v, p := r.OptEnum(l, "a", "b", "c")
		if v != tt.want || message(p) != tt.err {
			t.Errorf("OptEnum(%s) = %q, %q; want %q, %q", tt.body, v, message(p), tt.want, tt.err)
		}
	}
	r := New([]byte(`null`), &w)
	if _, p := r.Enum(l, "a"); message(p) != "type e want S got null" {
		t.Errorf("Enum(null) = %q", message(p))
	}
}
