package jsonread

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestValid(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{``, false}, {` `, false}, {`{`, false}, {`{"a"}`, false}, {`{"a":}`, false}, {`{,"a":1}`, false},
		{`{"a":1,}`, false}, {`[1,]`, false}, {`[,1]`, false}, {`01`, false}, {`1.`, false}, {`.5`, false},
		{`1e`, false}, {`-`, false}, {`tru`, false}, {`nul`, false}, {`"a`, false}, {"\"\x01\"", false},
		{`"\x"`, false}, {`"\u12"`, false}, {`{} {}`, false}, {`{"a":1}}`, false}, {`[1] x`, false},
		{`{}`, true}, {`[]`, true}, {` {"a" : [1, -2.5e+3, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"]} `, true},
		{`0`, true}, {`-0.0E-0`, true}, {`"\ud83d\ude00"`, true}, {`"\udc00"`, true},
		{string(bytes.Repeat([]byte("["), MaxDepth+1)) + string(bytes.Repeat([]byte("]"), MaxDepth+1)), false},
		{string(bytes.Repeat([]byte("["), MaxDepth)) + string(bytes.Repeat([]byte("]"), MaxDepth)), true},
	}
	for _, tt := range tests {
		if got := Valid([]byte(tt.in)); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

type sample struct {
	ID      string
	N       int
	OK      bool
	Items   []string
	Raw     string
	Skipped bool
}

func decodeSample(data []byte) (sample, error) {
	var d Decoder
	d.Reset(data)
	var s sample
	d.Object(func(key []byte) {
		switch string(key) {
		case "id":
			s.ID = d.Str()
		case "n":
			s.N = d.Int()
		case "ok":
			s.OK = d.Bool()
		case "items":
			d.Array(func() { s.Items = append(s.Items, d.Str()) })
		case "raw":
			s.Raw = string(d.Raw())
		}
	})
	return s, d.End()
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		in      string
		want    sample
		wantErr bool
	}{
		{in: `{"id":1}`, wantErr: true},
		{in: `{"n":"1"}`, wantErr: true},
		{in: `{"n":1.5}`, wantErr: true},
		{in: `{"n":99999999999999999999999}`, wantErr: true},
		{in: `{"ok":"true"}`, wantErr: true},
		{in: `{"items":{}}`, wantErr: true},
		{in: `{"skip":[1,{"x":[}]}`, wantErr: true},
		{in: `[]`, wantErr: true},
		{in: `{"id":"a"`, wantErr: true},
		{in: `{"id":"a"} x`, wantErr: true},
		{in: `null`, want: sample{}},
		{in: `{"id":null,"n":null,"ok":null,"items":null}`, want: sample{}},
		{in: ` { "id" : "a\u00e9\n" , "n" : -42 , "ok" : true , "items" : [ "x" , null , "z" ] , "skip" : {"deep":[1,2,{"a":"b"}]}, "raw" : {"k": [1, 2]} } `,
			want: sample{ID: "a\u00e9\n", N: -42, OK: true, Items: []string{"x", "", "z"}, Raw: `{"k": [1, 2]}`}},
		{in: `{"id":"first","id":"last"}`, want: sample{ID: "last"}},
	}
	for _, tt := range tests {
		got, err := decodeSample([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// FuzzDecode checks the decoder against encoding/json: same verdict on
// validity, same string values.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":"b\u00e9\ud83d\ude00\udc00"}`, `"\xff\xfe"`, `[1,-2.5e3,true,null]`, `{"a":{"b":[]}}`, "\"a\u2028b\"", `01`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", data, got, want)
		}
		var want string
		if json.Unmarshal(data, &want) == nil {
			var d Decoder
			d.Reset(data)
			got := d.Str()
			if err := d.End(); err != nil || got != want {
				t.Fatalf("Str(%q) = %q, %v; encoding/json says %q", data, got, err, want)
			}
		}
	})
}

// TestPlain8 checks the eight-byte fast path against the byte-by-byte rule
// it stands for: plain8 may say "look closer" for a plain word, but must
// never pass a word holding a quote, a backslash, a control or a high byte.
func TestPlain8(t *testing.T) {
	plain := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				return false
			}
		}
		return true
	}
	check := func(b []byte) {
		t.Helper()
		if plain8(binary.LittleEndian.Uint64(b)) && !plain(b) {
			t.Fatalf("plain8(%q) passed a word that needs a look", b)
		}
	}
	// Every byte value in every position, among plain neighbours: exact.
	for pos := range 8 {
		for c := range 256 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			check(b)
			if plain(b) && !plain8(binary.LittleEndian.Uint64(b)) {
				t.Fatalf("plain8(%q) = false for a plain word", b)
			}
		}
	}
	// Random words, biased towards the bytes that matter and the borrows
	// between them.
	rng := rand.New(rand.NewPCG(1, 2))
	special := []byte{0, 0x01, 0x1f, 0x20, 0x21, '"', '#', '\\', ']', 0x7f, 0x80, 0xff}
	for range 200000 {
		b := make([]byte, 8)
		for i := range b {
			if rng.IntN(2) == 0 {
				b[i] = special[rng.IntN(len(special))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
		check(b)
	}
}

func TestIsObjectArgs(t *testing.T) {
	for args, want := range map[string]bool{
		"": true, "  ": true, `{}`: true, ` {"a":1}`: true,
		`[]`: false, `"s"`: false, `{"a":`: false, `{} {}`: false, `null`: false,
	} {
		if got := IsObjectArgs(args); got != want {
			t.Errorf("IsObjectArgs(%q) = %v", args, got)
		}
	}
}

// tree reads any value through the Decoder into the shape encoding/json
// gives it with UseNumber, so the two parsers can be compared value for
// value.
func tree(d *Decoder) any {
	switch c := d.Peek(); {
	case c == '{':
		m := map[string]any{}
		d.Object(func(key []byte) {
			k := string(key) // valid only until the value is read
			m[k] = tree(d)
		})
		return m
	case c == '[':
		a := []any{}
		d.Array(func() { a = append(a, tree(d)) })
		return a
	case c == '"':
		return d.Str()
	case c == 't' || c == 'f':
		return d.Bool()
	case c == 'n':
		d.IsNull()
		return nil
	default:
		return json.Number(d.Raw())
	}
}

// FuzzDecodeTree holds the merged parser to encoding/json on whole
// documents: the same verdict from Scanner, Decoder and encoding/json, and
// for valid input the same tree (keys, strings after unescaping, number
// texts, the last of duplicate keys).
func FuzzDecodeTree(f *testing.F) {
	for _, s := range scannerCases {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"a":{"b":[1,"x\n",{"a\u0062":null}]},"a":false}`, `[{"k":"\ud83d\ude00"},-0.5e-3,true]`, `{"\u00e9":"\xff"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		d.Reset(data)
		got := tree(&d)
		err := d.End()
		valid := json.Valid(data)
		if (err == nil) != valid || (Validate(data) == nil) != valid {
			t.Fatalf("Decoder %v, Validate %v, encoding/json valid=%v for %q", err, Validate(data), valid, data)
		}
		if !valid {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tree(%q) = %#v, encoding/json says %#v", data, got, want)
		}
	})
}

// The Decoder's unescaped strings live in a reused buffer: reading an
// event costs no allocation once the buffer has grown.
func TestDecoderNoAlloc(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-1","choices":[{"delta":{"content":"a\nb \u00e9"},"index":0}],"usage":null}`)
	var d Decoder
	n := 0
	read := func() {
		d.Reset(data)
		d.Object(func(key []byte) {
			if string(key) == "choices" {
				d.Array(func() {
					d.Object(func(key []byte) {
						if string(key) == "delta" {
							d.Object(func([]byte) { n += len(d.Bytes()) })
						}
					})
				})
			}
		})
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if a := testing.AllocsPerRun(100, read); a != 0 {
		t.Fatalf("a decode allocated %v times", a)
	}
}
