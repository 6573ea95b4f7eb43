package jsonscan

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// scannerCases are tricky inputs for the pull parser; encoding/json is the
// oracle for each.
var scannerCases = []string{
	`"a\u00e9\ud83c\udf89\ud800x\"\\\/\b\f\n\r\t"`, "\"\xff\xc3\"", `"\\"`, `"\\\""`, `"a\"`, `"\"`, `"\`,
	`"\ud83c\u0041"`, `"\udc00\ud800"`, `"\ud800\uZZZZ"`, `"\u12"`, `"\x"`, "\"\x1f\"", "\"\x7f\"", "\"\u2028\"",
	`{"a":[1,-0.5e+3,true,false,null,{}]}`, `{"a\u0062":1}`, `[]`, `[1,]`, `[,1]`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`,
	`01`, `-`, `1.`, `1e`, `1e+`, `-0`, `0.0e-0`, `tru`, `nul`, ` {"a" : 1 } `, `1 2`, "\ufeff{}", "",
	strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2),
}

func checkScanner(t *testing.T, b []byte) {
	t.Helper()
	if got, want := Validate(b) == nil, json.Valid(b); got != want {
		t.Fatalf("Validate=%v json.Valid=%v for %.200q", got, want, b)
	}
	if len(b) == 0 || b[0] != '"' || !json.Valid(b) {
		return
	}
	var want string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	s := New(b)
	got, p := s.RawString()
	if p != nil || string(got) != want {
		t.Fatalf("RawString(%q) = %q, %v; encoding/json says %q", b, got, p, want)
	}
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	for _, c := range scannerCases {
		checkScanner(t, []byte(c))
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct{ body, msg string }{
		{``, "unexpected end of input at offset 0"},
		{`{"a":1} x`, "invalid character after top-level value at offset 8"},
		{`{"a":tru}`, "invalid character '}' at offset 8"},
		{"\"\x01\"", "invalid control character in string at offset 1"},
		{`"\x"`, "invalid escape in string at offset 1"},
		{`"\u12G4"`, `invalid \u escape in string`},
		{strings.Repeat("[", MaxDepth+2), "nesting too deep"},
		{"{\"a\":\xff}", `invalid character '\u00ff'`},
	} {
		p := Validate([]byte(tc.body))
		if p == nil || p.Status != 400 || !strings.HasPrefix(p.Message, "request body is not valid JSON: ") || !strings.Contains(p.Message, tc.msg) {
			t.Errorf("Validate(%.40q) = %v, want a 400 containing %q", tc.body, p, tc.msg)
		}
	}
}

// A semantic error a dialect builds is never mistaken for a syntax error.
func TestIsSyntax(t *testing.T) {
	s := New([]byte(`{"a" 1}`))
	s.Open()
	_, _, p := s.NextKey(true)
	if !s.IsSyntax(p) {
		t.Fatalf("NextKey error %v is not a syntax error", p)
	}
	ok := New([]byte(`{}`))
	if ok.IsSyntax(nil) || ok.IsSyntax(p) {
		t.Fatal("IsSyntax must only recognise this scanner's own error")
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		in    string
		n     int
		isInt bool
	}{
		{"0", 0, true}, {"-7", -7, true}, {"1024", 1024, true},
		{"1.5", 0, false}, {"1e3", 0, false}, {"-0.0", 0, false},
		{"99999999999", math.MaxInt32, true}, {"-99999999999", math.MinInt32, true},
		{"123456789012345678901234567890", math.MaxInt32, true},
	} {
		s := New([]byte(tc.in))
		n, isInt, p := s.Int()
		if p != nil || n != tc.n || isInt != tc.isInt {
			t.Errorf("Int(%s) = %d, %v, %v; want %d, %v", tc.in, n, isInt, p, tc.n, tc.isInt)
		}
	}
	s := New([]byte("1e999"))
	if _, inRange, p := s.Float(); p != nil || inRange {
		t.Errorf("Float(1e999) in range %v, %v", inRange, p)
	}
	s = New([]byte("-2.5e-1"))
	if f, inRange, p := s.Float(); p != nil || !inRange || f != -0.25 {
		t.Errorf("Float(-2.5e-1) = %v, %v, %v", f, inRange, p)
	}
	s = New([]byte("-x"))
	if _, _, p := s.Int(); !s.IsSyntax(p) {
		t.Errorf("Int(-x) = %v, want a syntax error", p)
	}
}

// Raw values are capped: appending to one never writes into the body.
func TestRawIsCapped(t *testing.T) {
	body := []byte(`[{"a":1},2]`)
	s := New(body)
	s.Open()
	s.NextElem(true)
	raw, p := s.Raw()
	if p != nil || string(raw) != `{"a":1}` {
		t.Fatalf("Raw = %q, %v", raw, p)
	}
	_ = append(raw, 'X')
	if string(body) != `[{"a":1},2]` {
		t.Fatalf("append through Raw changed the body: %s", body)
	}
}

// FuzzScanner holds the pull parser to encoding/json: the same bodies are
// valid, and strings decode to the same text.
func FuzzScanner(f *testing.F) {
	for _, c := range scannerCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkScanner)
}

// Mark and Since keep a value whole while it is read member by member.
func TestMarkSince(t *testing.T) {
	s := New([]byte(`{"s": {"type":"object","x":[1]} }`))
	s.Open()
	s.NextKey(true)
	m := s.Mark()
	s.Open()
	for first := true; ; first = false {
		_, ok, p := s.NextKey(first)
		if p != nil {
			t.Fatal(p)
		}
		if !ok {
			break
		}
		if p := s.Skip(); p != nil {
			t.Fatal(p)
		}
	}
	got := s.Since(m)
	if string(got) != `{"type":"object","x":[1]}` || cap(got) != len(got) {
		t.Fatalf("Since = %q (cap %d)", got, cap(got))
	}
	s.Rewind(m)
	if raw, p := s.Raw(); p != nil || string(raw) != string(got) {
		t.Fatalf("Raw after Rewind = %q, %v", raw, p)
	}
	s.Rewind(len(`{"s": {"type":"object","x":[1]} }`) + 1) // beyond the position: ignored
	if c := s.Peek(); c != '}' {
		t.Fatalf("a Rewind beyond the position moved it: next is %q", c)
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		p    Path
		want string
	}{
		{Field("model"), "model"},
		{Field("messages").At(2), "messages[2]"},
		{Field("messages").At(2).F("content").At(0).F("text"), "messages[2].content[0].text"},
		{Field("tools").At(0).F("function").F("parameters"), "tools[0].function.parameters"},
		{Field("input").At(0).At(3), "input[3]"},
		{Field("a").F("b").F("c").F("d").F("e").F("f").At(1), "a.b.c.d.e[1]"},
		{Path{}.At(1), ""},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("path %q, want %q", got, tt.want)
		}
	}
	// A Path is a value: extending one leaves the original as it was.
	base := Field("messages").At(1)
	_ = base.F("content")
	if base.String() != "messages[1]" {
		t.Errorf("base became %q", base)
	}
}
