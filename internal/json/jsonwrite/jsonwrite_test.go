package jsonwrite

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
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

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.7, 1.5, 2, 1e-7, 1.5e-9, 1e21, 123456789.125, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, _ := json.Marshal(f)
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

// FuzzEncode checks AppendString and AppendCompact against encoding/json.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"plain", "q\"b\\c\n\t\x01\x7f<>&", "\xff\u2028\u2029é😀", ` { "a" : [ 1 , "x y" ] } `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got, want := string(AppendString(nil, s)), string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		var c bytes.Buffer
		err := json.Compact(&c, []byte(s))
		got, ok := AppendCompact(nil, []byte(s))
		if ok != (err == nil) || (ok && string(got) != c.String()) {
			t.Fatalf("AppendCompact(%q) = %s %v, want %s %v", s, got, ok, c.String(), err)
		}
	})
}

// FuzzRoundTrip builds a document with the writer from arbitrary values and
// reads it back with encoding/json: every value comes back as written
// (strings as encoding/json would have written them, invalid UTF-8 as
// U+FFFD), and the document is compact, valid JSON.
func FuzzRoundTrip(f *testing.F) {
	f.Add("k", "v\n\"\u2028", int64(-42), 1.5e-9, true, `{"a" : [1, "x"]}`)
	f.Add("", "\xff\xfe", int64(math.MaxInt64), 1e21, false, `null`)
	f.Add("é", "", int64(0), -0.0, true, `[`)
	f.Fuzz(func(t *testing.T, key, s string, n int64, x float64, b bool, raw string) {
		dst := append([]byte(nil), '{')
		dst = Key(dst, "s")
		dst = AppendString(dst, s)
		dst = Key(dst, "null")
		dst = AppendStringOrNull(dst, "")
		dst = Key(dst, "n")
		dst = AppendInt(dst, n)
		dst = Key(dst, "b")
		dst = AppendBool(dst, b)
		if Finite(x) {
			dst = Key(dst, "x")
			dst = AppendFloat(dst, x)
		}
		dst = Key(dst, "list")
		dst = append(dst, '[')
		dst = Sep(dst)
		dst = AppendString(dst, []byte(key))
		dst = Sep(dst)
		dst = AppendStringOrNull(dst, key)
		compact, ok := AppendCompact(Sep(dst), []byte(raw))
		if ok {
			dst = compact
		}
		dst = append(dst, ']', '}')

		var got map[string]any
		dec := json.NewDecoder(bytes.NewReader(dst))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("writer output %q does not parse: %v", dst, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, dst); err != nil || !bytes.Equal(c.Bytes(), dst) {
			t.Fatalf("writer output %q is not compact: %v", dst, err)
		}
		text := func(v string) string { return string([]rune(v)) } // invalid UTF-8 as U+FFFD
		want := map[string]any{
			"s": text(s), "null": nil, "n": json.Number(AppendInt(nil, n)), "b": b,
		}
		list := []any{text(key)}
		if key == "" {
			list = append(list, nil)
		} else {
			list = append(list, text(key))
		}
		if ok {
			var v any
			d := json.NewDecoder(bytes.NewReader([]byte(raw)))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("AppendCompact accepted %q: %v", raw, err)
			}
			list = append(list, v)
		}
		want["list"] = list
		if Finite(x) {
			if f, err := got["x"].(json.Number).Float64(); err != nil || f != x {
				t.Fatalf("float %v came back as %v (%v)", x, got["x"], err)
			}
			delete(got, "x")
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %q:\n got %#v\nwant %#v", dst, got, want)
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
