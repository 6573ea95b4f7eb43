package fields

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// testWords exercises every format argument.
var testWords = Wording{
	Kinds:        Kinds{String: "S", Bool: "B", Int: "I", Number: "N", Object: "O", Array: "A", Schema: "SCHEMA"},
	Type:         "type %[1]s want %[2]s got %[3]s",
	Fraction:     "fraction %[1]s",
	Overflow:     "overflow %[1]s %[2]g..%[3]g",
	Range:        "range %[1]s %[2]g..%[3]g %[4]g",
	Required:     "required %[1]s",
	Unrecognized: "unknown %[1]s",
	Refused:      "refused %[1]s: %[2]s",
	NotObject:    "not an object: %[1]s",
	Syntax:       "syntax: %[1]s at %[2]d",
}

func TestPath(t *testing.T) {
	dots := Wording{Path: Dots}
	tests := []struct {
		p    Path
		want string
	}{
		{testWords.Field("model"), "model"},
		{testWords.Field("messages").At(2), "messages[2]"},
		{testWords.Field("messages").At(2).F("content").At(0).F("text"), "messages[2].content[0].text"},
		{testWords.Field("tools").At(0).F("function").F("parameters"), "tools[0].function.parameters"},
		{testWords.Field("input").At(0).At(3), "input[3]"},
		{testWords.Field("a").F("b").F("c").F("d").F("e").F("f").At(1), "a.b.c.d.e[1]"},
		{Path{}.At(1), ""},
		{dots.Field("messages").At(2).F("content").At(0).F("text"), "messages.2.content.0.text"},
		{dots.Field("a").At(0).At(1), "a.0.1"},
		{dots.Field("a").At(1).F("b").At(2).F("c").At(3).F("d").At(4).F("e"), "a.1.b.2.c.3.d.4"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("path %q, want %q", got, tt.want)
		}
	}
	// A Path is a value: extending one leaves the original as it was.
	base := testWords.Field("messages").At(1)
	_ = base.F("content")
	if base.String() != "messages[1]" {
		t.Errorf("base became %q", base)
	}
}

// Each reader words its errors by the table, with the path as param.
func TestWording(t *testing.T) {
	l := testWords.Field("f")
	tests := []struct {
		body string
		read func(r *Reader) any
		want string
	}{
		{`1`, func(r *Reader) any { _, p := r.Str(l); return p }, "type f want S got a number"},
		{`"x"`, func(r *Reader) any { _, p := r.StrRaw(l); return p }, ""},
		{`{}`, func(r *Reader) any { _, _, p := r.OptStr(l); return p }, "type f want S got an object"},
		{`null`, func(r *Reader) any { _, _, p := r.OptStr(l); return p }, ""},
		{`"t"`, func(r *Reader) any { _, p := r.Bool(l); return p }, "type f want B got a string"},
		{`[]`, func(r *Reader) any { _, p := r.OptBool(l); return p }, "type f want B got an array"},
		{`1.5`, func(r *Reader) any { _, p := r.Int(l); return p }, "fraction f"},
		{`true`, func(r *Reader) any { _, p := r.Int(l); return p }, "type f want I got a boolean"},
		{`1e999`, func(r *Reader) any { _, p := r.Float(l); return p }, "overflow f 0..0"},
		{`1e999`, func(r *Reader) any { _, p := r.Range(l, 0, 2); return p }, "overflow f 0..2"},
		{`3`, func(r *Reader) any { _, p := r.Range(l, 0, 2); return p }, "range f 0..2 3"},
		{`"3"`, func(r *Reader) any { _, p := r.Range(l, 0, 2); return p }, "type f want N got a string"},
		{`[]`, func(r *Reader) any { return r.Object(l) }, "type f want O got an array"},
		{`{}`, func(r *Reader) any { return r.Array(l) }, "type f want A got an object"},
		{`1`, func(r *Reader) any { return r.OptObject(l) }, "type f want O got a number"},
		{`1`, func(r *Reader) any { return r.OptArray(l) }, "type f want A got a number"},
		{`[]`, func(r *Reader) any { _, p := r.Schema(l); return p }, "type f want SCHEMA got an array"},
		{`{"a":1}`, func(r *Reader) any { return r.RejectUnlessNull(l, "why") }, "refused f: why"},
		{`null`, func(r *Reader) any { return r.RejectUnlessNull(l, "why") }, ""},
		{`{"a":[}`, func(r *Reader) any { return r.RejectUnlessNull(l, "why") }, "syntax: invalid character '}' at 6"},
		{`{"a":1,"b":2}`, func(r *Reader) any {
			return r.Members(l, func(key []byte) *failure.Public {
				if string(key) == "b" {
					return testWords.Unknown(l.F("b"))
				}
				return r.Skip()
			})
		}, "unknown f.b"},
		{`[1,2,"x"]`, func(r *Reader) any {
			return r.Elements(l, func(i int) *failure.Public { _, p := r.Int(l.At(i)); return p })
		}, "type f[2] want I got a string"},
	}
	for _, tt := range tests {
		r := New([]byte(tt.body), &testWords)
		p, _ := tt.read(&r).(*failure.Public)
		switch {
		case tt.want == "" && p != nil:
			t.Errorf("%s: unexpected error %q", tt.body, p.Message)
		case tt.want != "" && (p == nil || p.Message != tt.want || p.Status != 400):
			t.Errorf("%s: got %+v, want %q", tt.body, p, tt.want)
		case p != nil && !strings.HasPrefix(tt.want, "syntax") && p.Param != "f" && !strings.HasPrefix(p.Param, "f"):
			t.Errorf("%s: param %q, want the field's path", tt.body, p.Param)
		}
	}
	if p := testWords.Missing(l); p.Message != "required f" || p.Param != "f" {
		t.Errorf("Missing: %+v", p)
	}
	if p := testWords.Bad(l.At(1), "no %s", "way"); p.Message != "no way" || p.Param != "f[1]" {
		t.Errorf("Bad without a frame: %+v", p)
	}
	framed := Wording{Path: Dots, Frame: "%[1]s: %[2]s"}
	if p := framed.Bad(framed.Field("f").At(1), "no %s", "way"); p.Message != "f.1: no way" || p.Param != "f.1" {
		t.Errorf("Bad with a frame: %+v", p)
	}
}

// A semantic error a dialect builds is never mistaken for a syntax error,
// and Decode reports a syntax error anywhere in the body before a field
// error.
func TestIsSyntaxAndDecode(t *testing.T) {
	r := New([]byte(`{"a" 1}`), &testWords)
	r.Open()
	_, _, p := r.NextKey(true)
	if !r.IsSyntax(p) || p.Message != "syntax: invalid character '1' at 5" {
		t.Fatalf("NextKey error %+v is not this reader's syntax error", p)
	}
	ok := New([]byte(`{}`), &testWords)
	if ok.IsSyntax(nil) || ok.IsSyntax(p) {
		t.Fatal("IsSyntax must only recognise the reader's own error")
	}
	for body, want := range map[string]string{
		`{"a":1,"b":[}`: "syntax: invalid character '}' at 12", // the field error on a comes second
		`{"b":1}`:       "",
		`[1]`:           "not an object: an array",
		`{"a":1}`:       "unknown a",
		`{"b":1} x`:     "syntax: invalid character after top-level value at 8",
		``:              "syntax: unexpected end of input at 0",
	} {
		q := &testRequest{}
		var r Reader
		got, p := Decode(&r, []byte(body), &testWords, q, func(key []byte) *failure.Public { return q.Member(&r, key) })
		switch {
		case want == "" && (p != nil || !q.checked || got != &q.Request):
			t.Errorf("Decode(%s) = %v, %+v, checked %v", body, got, p, q.checked)
		case want != "" && (p == nil || p.Message != want || q.checked || got != nil):
			t.Errorf("Decode(%s) = %v, %+v, want %q (and no check)", body, got, p, want)
		}
	}
	if p := testWords.Validate([]byte(strings.Repeat("[", jsonread.MaxDepth+1))); p == nil || !strings.Contains(p.Message, "nesting too deep") {
		t.Errorf("Validate of a too deep body: %+v", p)
	}
}

// testRequest refuses a member named a and skips the others.
type testRequest struct {
	canonical.Request
	checked bool
}

func (q *testRequest) Member(r *Reader, key []byte) *failure.Public {
	if string(key) == "a" {
		return testWords.Unknown(testWords.Field("a"))
	}
	return r.Skip()
}

func (q *testRequest) Check() *failure.Public {
	q.checked = true
	return nil
}

func (q *testRequest) Canonical() *canonical.Request { return &q.Request }
