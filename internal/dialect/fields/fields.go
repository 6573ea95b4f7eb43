// Package fields holds the typed field readers the caller dialects share:
// a Reader over jsonread's pull parser whose errors are 400s worded by the
// dialect's own table (Wording), so each dialect keeps only its wording.
package fields

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// Wording is a dialect's table of error messages: fmt formats whose
// arguments are given by explicit index, so a format may leave any out.
type Wording struct {
	Path PathStyle
	// Frame is how every field error reads: %[1]s path, %[2]s what is
	// wrong. "" is what is wrong alone.
	Frame string
	// Kinds names each expected type in Type.
	Kinds Kinds
	// Type: a value of the wrong JSON type. %[1]s path, %[2]s the expected
	// kind, %[3]s the kind given ("a string", "null", ...).
	Type string
	// Fraction: an integer field holding a number with a fraction or an
	// exponent. %[1]s path.
	Fraction string
	// Overflow: a number beyond float64's range; Range: a number outside
	// [lo, hi]. %[1]s path, %[2]g lo, %[3]g hi, %[4]g the number (Range).
	Overflow, Range string
	// Required and Unrecognized: a required field absent, a field not in
	// the API. %[1]s path.
	Required, Unrecognized string
	// Refused: a real feature the gateway refuses. %[1]s path, %[2]s why.
	Refused string
	// Pattern: a tool or format name providers refuse (see BadName).
	// %[1]s path.
	Pattern string
	// Empty: an array that must have an element has none (see NonEmpty).
	// %[1]s path.
	Empty string
	// Enum: a string not among the values allowed (see Enum). %[1]s path,
	// %[2]s the string, %[3]s the values, the last joined by Or.
	Enum, Or string
	// NotObject: a body that is not a JSON object. %[1]s the kind given.
	NotObject string
	// Syntax: a body that is not JSON. %[1]s what is wrong, %[2]d offset.
	Syntax string
}

// Kinds names the expected types, as a dialect writes them in Type.
type Kinds struct {
	String, Bool, Int, Number, Object, Array, Schema string
}

// Field is the path of a top-level field, in the table's style.
func (w *Wording) Field(name string) Path {
	p := Path{style: w.Path}
	return p.F(name)
}

// Bad is a 400 naming the field at p, framed by the table.
func (w *Wording) Bad(p Path, format string, args ...any) *failure.Public {
	if w.Frame == "" {
		return failure.BadRequest(p.String(), format, args...)
	}
	ps := p.String()
	return failure.BadRequest(ps, w.Frame, ps, fmt.Sprintf(format, args...))
}

// bad is a 400 for the field at p worded by format, whose first argument
// is the path.
func bad(p Path, format string, args ...any) *failure.Public {
	ps := p.String()
	return failure.BadRequest(ps, format, append([]any{ps}, args...)...)
}

// Missing reports a required field absent.
func (w *Wording) Missing(p Path) *failure.Public { return bad(p, w.Required) }

// Unknown reports a field the API does not have.
func (w *Wording) Unknown(p Path) *failure.Public { return bad(p, w.Unrecognized) }

// Unsupported refuses a real feature the gateway cannot honour on every
// provider, so it is never silently dropped.
func (w *Wording) Unsupported(p Path, why string) *failure.Public {
	return bad(p, w.Refused, why)
}

// syntax words a parser error.
func (w *Wording) syntax(err error) *failure.Public {
	var se *jsonread.SyntaxError
	if !errors.As(err, &se) {
		se = &jsonread.SyntaxError{Msg: err.Error()}
	}
	return failure.BadRequest("", w.Syntax, se.Msg, se.Offset)
}

// Validate reports the first syntax error in body, or nil.
func (w *Wording) Validate(body []byte) *failure.Public {
	if err := jsonread.Validate(body); err != nil {
		return w.syntax(err)
	}
	return nil
}

// Reader is the pull parser with the typed field readers: every error is a
// 400 in the dialect's wording. Strings and raw values alias the body it
// reads, as jsonread.Scanner's do.
type Reader struct {
	s      jsonread.Scanner
	w      *Wording
	syntax *failure.Public // the parser's error, once worded
}

// New reads body, which the Reader borrows, wording errors by w.
func New(body []byte, w *Wording) Reader { return Reader{s: jsonread.New(body), w: w} }

// fail words the parser's error, once: the parser returns its first error
// again, and IsSyntax recognises it.
func (r *Reader) fail(err error) *failure.Public {
	if r.syntax == nil {
		r.syntax = r.w.syntax(err)
	}
	return r.syntax
}

// IsSyntax reports whether p is the syntax error this Reader reported. A
// parse-then-validate server reports broken JSON before any field error,
// so a dialect that got a semantic error first validates the whole body.
func (r *Reader) IsSyntax(p *failure.Public) bool { return p != nil && p == r.syntax }

// Request is what a dialect decodes a request body into.
type Request interface {
	// Check judges the request as a whole once every member is read.
	Check() *failure.Public
	// Canonical is the request in canonical form.
	Canonical() *canonical.Request
}

// Decode reads a request body into req with r: member reads each
// top-level member (the value next in r). r reads a private copy of body,
// so the request's strings may alias it (one allocation for all unescaped
// text) while the caller reuses body at once. A syntax error anywhere in
// body is reported before any field error, as a parse-then-validate server
// reports it.
//
// r is the caller's, and member a closure over it, so that the member
// reads are static calls and the Reader stays on the caller's stack.
func Decode(r *Reader, body []byte, w *Wording, req Request, member func(key []byte) *failure.Public) (*canonical.Request, *failure.Public) {
	*r = New(bytes.Clone(body), w)
	p := r.body(member)
	switch {
	case p == nil:
		p = req.Check()
	case !r.IsSyntax(p):
		if sp := w.Validate(body); sp != nil {
			p = sp
		}
	}
	if p != nil {
		return nil, p
	}
	return req.Canonical(), nil
}

func (r *Reader) body(member func(key []byte) *failure.Public) *failure.Public {
	if r.Peek() != '{' {
		return failure.BadRequest("", r.w.NotObject, r.Kind())
	}
	r.Open()
	if p := r.members(member); p != nil {
		return p
	}
	return r.End()
}

// Peek skips whitespace and returns the next byte, 0 at the end.
func (r *Reader) Peek() byte { return r.s.Peek() }

// Kind names the JSON type of the next value ("a string", "null", ...).
func (r *Reader) Kind() string { return r.s.Kind() }

// Open consumes '{' or '[' (the caller checked which is next).
func (r *Reader) Open() { r.s.Open() }

// Mark, Since and Rewind keep or reread a value (see jsonread.Scanner).
func (r *Reader) Mark() int             { return r.s.Mark() }
func (r *Reader) Since(mark int) []byte { return r.s.Since(mark) }
func (r *Reader) Rewind(mark int)       { r.s.Rewind(mark) }

// Literal consumes lit (true, false or null), which must be next.
func (r *Reader) Literal(lit string) *failure.Public { return r.check(r.s.Literal(lit)) }

// check words err, nil staying nil.
func (r *Reader) check(err error) *failure.Public {
	if err != nil {
		return r.fail(err)
	}
	return nil
}

// End checks that nothing but whitespace follows the top-level value.
func (r *Reader) End() *failure.Public { return r.check(r.s.End()) }

// NextKey advances to the next member of an object whose '{' was read; it
// returns the key, or false after the closing '}'.
func (r *Reader) NextKey(first bool) ([]byte, bool, *failure.Public) {
	key, ok, err := r.s.NextKey(first)
	if err != nil {
		return nil, false, r.fail(err)
	}
	return key, ok, nil
}

// NextElem advances to the next element of an array whose '[' was read;
// it returns false after the closing ']'.
func (r *Reader) NextElem(first bool) (bool, *failure.Public) {
	ok, err := r.s.NextElem(first)
	if err != nil {
		return false, r.fail(err)
	}
	return ok, nil
}

// Skip reads and checks one value of any type.
func (r *Reader) Skip() *failure.Public { return r.check(r.s.Skip()) }

// Raw reads one value and returns its text, capped (see jsonread).
func (r *Reader) Raw() ([]byte, *failure.Public) {
	raw, err := r.s.Raw()
	if err != nil {
		return nil, r.fail(err)
	}
	return raw, nil
}

// Null consumes a null if one is next. Optional fields treat null as
// absent.
func (r *Reader) Null() (bool, *failure.Public) {
	isNull, err := r.s.Null()
	if err != nil {
		return true, r.fail(err)
	}
	return isNull, nil
}

// TypeErr reports the next value as not of the kind want.
func (r *Reader) TypeErr(p Path, want string) *failure.Public {
	return bad(p, r.w.Type, want, r.Kind())
}

// Str reads a string; it aliases the body unless it had escapes.
func (r *Reader) Str(p Path) (string, *failure.Public) {
	if r.Peek() != '"' {
		return "", r.TypeErr(p, r.w.Kinds.String)
	}
	v, err := r.s.Str()
	if err != nil {
		return "", r.fail(err)
	}
	return v, nil
}

// StrRaw is Str without the conversion, for values only compared.
func (r *Reader) StrRaw(p Path) ([]byte, *failure.Public) {
	if r.Peek() != '"' {
		return nil, r.TypeErr(p, r.w.Kinds.String)
	}
	v, err := r.s.RawString()
	if err != nil {
		return nil, r.fail(err)
	}
	return v, nil
}

// OptStr reads a string or null; given reports a non-null value.
func (r *Reader) OptStr(p Path) (v string, given bool, _ *failure.Public) {
	if isNull, e := r.Null(); isNull || e != nil {
		return "", false, e
	}
	v, e := r.Str(p)
	return v, e == nil, e
}

// Bool reads true or false.
func (r *Reader) Bool(p Path) (bool, *failure.Public) {
	if c := r.Peek(); c != 't' && c != 'f' {
		return false, r.TypeErr(p, r.w.Kinds.Bool)
	}
	b, err := r.s.Bool()
	if err != nil {
		return false, r.fail(err)
	}
	return b, nil
}

// OptBool reads a boolean or null (nil).
func (r *Reader) OptBool(p Path) (*bool, *failure.Public) {
	b, given, e := r.MaybeBool(p)
	if !given || e != nil {
		return nil, e
	}
	return &b, nil
}

// MaybeBool reads a boolean or null; given reports a non-null value. It is
// OptBool without the pointer, which costs an allocation.
func (r *Reader) MaybeBool(p Path) (v, given bool, _ *failure.Public) {
	if isNull, e := r.Null(); isNull || e != nil {
		return false, false, e
	}
	v, e := r.Bool(p)
	return v, e == nil, e
}

// Int reads an integer; values beyond the int32 range are clamped to it.
func (r *Reader) Int(p Path) (int, *failure.Public) {
	if !jsonread.IsNumberStart(r.Peek()) {
		return 0, r.TypeErr(p, r.w.Kinds.Int)
	}
	n, isInt, err := r.s.Int()
	switch {
	case err != nil:
		return 0, r.fail(err)
	case !isInt:
		return 0, bad(p, r.w.Fraction)
	}
	return n, nil
}

// Float reads a number within float64's range.
func (r *Reader) Float(p Path) (float64, *failure.Public) {
	return r.float(p, 0, 0)
}

func (r *Reader) float(p Path, lo, hi float64) (float64, *failure.Public) {
	if !jsonread.IsNumberStart(r.Peek()) {
		return 0, r.TypeErr(p, r.w.Kinds.Number)
	}
	f, inRange, err := r.s.Float()
	switch {
	case err != nil:
		return 0, r.fail(err)
	case !inRange:
		return 0, bad(p, r.w.Overflow, lo, hi)
	}
	return f, nil
}

// Range reads a number within [lo, hi], or null (nil).
func (r *Reader) Range(p Path, lo, hi float64) (*float64, *failure.Public) {
	if isNull, e := r.Null(); isNull || e != nil {
		return nil, e
	}
	f, e := r.float(p, lo, hi)
	if e != nil {
		return nil, e
	}
	if f < lo || f > hi {
		return nil, bad(p, r.w.Range, lo, hi, f)
	}
	return &f, nil
}

// Object checks that an object is next and consumes its '{'.
func (r *Reader) Object(p Path) *failure.Public {
	if r.Peek() != '{' {
		return r.TypeErr(p, r.w.Kinds.Object)
	}
	r.Open()
	return nil
}

// Array checks that an array is next and consumes its '['.
func (r *Reader) Array(p Path) *failure.Public {
	if r.Peek() != '[' {
		return r.TypeErr(p, r.w.Kinds.Array)
	}
	r.Open()
	return nil
}

// OptObject type-checks an ignored object (or null) and skips it.
func (r *Reader) OptObject(p Path) *failure.Public { return r.skipKind(p, '{', r.w.Kinds.Object) }

// OptArray type-checks an ignored array (or null) and skips it.
func (r *Reader) OptArray(p Path) *failure.Public { return r.skipKind(p, '[', r.w.Kinds.Array) }

func (r *Reader) skipKind(p Path, open byte, want string) *failure.Public {
	if isNull, e := r.Null(); isNull || e != nil {
		return e
	}
	if r.Peek() != open {
		return r.TypeErr(p, want)
	}
	return r.Skip()
}

// Schema reads a JSON Schema kept as raw JSON: an object, or null (nil).
func (r *Reader) Schema(p Path) (json.RawMessage, *failure.Public) {
	if isNull, e := r.Null(); isNull || e != nil {
		return nil, e
	}
	if r.Peek() != '{' {
		return nil, r.TypeErr(p, r.w.Kinds.Schema)
	}
	return r.Raw()
}

// RejectUnlessNull refuses any value but null as unsupported.
func (r *Reader) RejectUnlessNull(p Path, why string) *failure.Public {
	if isNull, e := r.Null(); isNull || e != nil {
		return e
	}
	if e := r.Skip(); e != nil {
		return e
	}
	return r.w.Unsupported(p, why)
}

// Members reads an object at p, calling member with each key; member
// reads the value. It stops at the first error.
func (r *Reader) Members(p Path, member func(key []byte) *failure.Public) *failure.Public {
	if e := r.Object(p); e != nil {
		return e
	}
	return r.members(member)
}

func (r *Reader) members(member func(key []byte) *failure.Public) *failure.Public {
	for first := true; ; first = false {
		key, ok, e := r.NextKey(first)
		if e != nil || !ok {
			return e
		}
		if e := member(key); e != nil {
			return e
		}
	}
}

// Elements reads an array at p, calling elem with each index; elem reads
// the element. It stops at the first error.
func (r *Reader) Elements(p Path, elem func(i int) *failure.Public) *failure.Public {
	if e := r.Array(p); e != nil {
		return e
	}
	_, e := r.Items(elem)
	return e
}

// NonEmpty is Items for an array at p that must have an element: an empty
// one is reported by the table's Empty.
func (r *Reader) NonEmpty(p Path, elem func(i int) *failure.Public) *failure.Public {
	n, e := r.Items(elem)
	if e == nil && n == 0 {
		e = r.w.EmptyArray(p)
	}
	return e
}

// EmptyArray reports an array at p that has no element but must.
func (w *Wording) EmptyArray(p Path) *failure.Public { return bad(p, w.Empty) }

// Items reads the elements of an array whose '[' was read (Open), calling
// elem with each index; elem reads the element. It returns how many
// elements were read, and stops at the first error.
func (r *Reader) Items(elem func(i int) *failure.Public) (int, *failure.Public) {
	for i := 0; ; i++ {
		ok, e := r.NextElem(i == 0)
		if e != nil || !ok {
			return i, e
		}
		if e := elem(i); e != nil {
			return i, e
		}
	}
}
