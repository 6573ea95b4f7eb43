package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// stdlib returns what encoding/json writes for s with HTML escaping off.
func stdlib(t testing.TB, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var stringCases = []struct {
	name, in, want string
}{
	{"empty", "", `""`},
	{"ascii", "hello", `"hello"`},
	{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
	{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
	{"other controls", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
	{"html kept", "<a href='x'>&</a>", `"<a href='x'>&</a>"`},
	{"multibyte", "héllo, 世界 🎉", `"héllo, 世界 🎉"`},
	{"line separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
	{"invalid utf8", "a\xffb\xc3", `"a\ufffdb\ufffd"`},
	{"surrogate half", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
	{"slash kept", "a/b", `"a/b"`},
}

func TestAppendString(t *testing.T) {
	for _, tc := range stringCases {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendString([]byte("x"), tc.in)
			if string(got) != "x"+tc.want {
				t.Fatalf("AppendString(%q) = %s, want %s", tc.in, got[1:], tc.want)
			}
			if b := AppendString(nil, []byte(tc.in)); string(b) != tc.want {
				t.Fatalf("AppendString([]byte %q) = %s, want %s", tc.in, b, tc.want)
			}
			if std := stdlib(t, tc.in); !bytes.Equal(got[1:], std) {
				t.Fatalf("differs from encoding/json: %s vs %s", got[1:], std)
			}
			var back string
			if err := json.Unmarshal(got[1:], &back); err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
			if utf8.ValidString(tc.in) && back != tc.in {
				t.Fatalf("round trip: %q, want %q", back, tc.in)
			}
		})
	}
}

func TestAppendScalars(t *testing.T) {
	var b []byte
	b = AppendStringOrNull(b, "")
	b = append(b, ',')
	b = AppendStringOrNull(b, "x")
	b = append(b, ',')
	b = AppendInt(b, -42)
	b = append(b, ',')
	b = AppendBool(b, true)
	if want := `null,"x",-42,true`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

func TestAppendStringNoAlloc(t *testing.T) {
	s := "a fairly typical token, with \"quotes\", é and a newline\n"
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], s) }); n != 0 {
		t.Fatalf("AppendString allocated %v times", n)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, tc := range stringCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if std := stdlib(t, s); !bytes.Equal(got, std) {
			t.Fatalf("AppendString(%q) = %s, encoding/json = %s", s, got, std)
		}
		if !utf8.Valid(got) {
			t.Fatalf("output is not UTF-8: %q", got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("output %s does not parse: %v", got, err)
		}
		if want := string([]rune(s)); utf8.ValidString(s) && back != want {
			t.Fatalf("round trip %q, want %q", back, want)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	s := "The quick brown fox said \"hi\" and jumped over the lazy dog.\n"
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
