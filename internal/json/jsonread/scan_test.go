package jsonread

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
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
	got, err := s.RawString()
	if err != nil || string(got) != want {
		t.Fatalf("RawString(%q) = %q, %v; encoding/json says %q", b, got, err, want)
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
		{"\"\x01", "unexpected end of input in string at offset 2"},
		{`"\x"`, "invalid escape in string at offset 1"},
		{`"\u12G4"`, `invalid \u escape in string at offset 1`},
		{`[1.]`, "invalid character ']' at offset 3"},
		{`-`, "unexpected end of input at offset 1"},
		{strings.Repeat("[", MaxDepth+2), "nesting too deep at offset 10000"},
		{"{\"a\":\xff}", `invalid character '\u00ff' at offset 5`},
	} {
		err := Validate([]byte(tc.body))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Msg+" at offset "+strconv.Itoa(se.Offset) != tc.msg || err.Error() != "json: "+tc.msg {
			t.Errorf("Validate(%.40q) = %v, want %q", tc.body, err, tc.msg)
		}
	}
}

// The first error sticks: a later failure returns it, not a new one.
func TestErrorSticks(t *testing.T) {
	s := New([]byte(`{"a" 1}`))
	s.Open()
	_, _, err := s.NextKey(true)
	if err == nil || s.Err() != err {
		t.Fatalf("NextKey error %v, Err %v", err, s.Err())
	}
	if err2 := s.Literal("true"); err2 != err {
		t.Fatalf("a later error %v replaced the first %v", err2, err)
	}
}

// Exactly MaxDepth levels of nesting are valid, as in encoding/json.
func TestMaxDepth(t *testing.T) {
	for _, n := range []int{MaxDepth, MaxDepth + 1} {
		b := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		if got, want := Valid(b), json.Valid(b); got != want || got != (n <= MaxDepth) {
			t.Errorf("depth %d: Valid = %v, encoding/json %v", n, got, want)
		}
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
	if _, _, err := s.Int(); err == nil {
		t.Errorf("Int(-x) = nil, want a syntax error")
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
