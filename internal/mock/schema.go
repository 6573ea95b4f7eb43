package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Structured output: when a request asks for JSON that follows a schema,
// the mock answers a deterministic, compact instance of that schema
// (jsonInstance), so SDK helpers that parse the answer succeed.

// jsonFormat is a request's demand for a JSON answer.
type jsonFormat struct {
	// schema is the JSON Schema (or Gemini's OpenAPI subset) the answer
	// must follow; empty means any JSON, answered {}.
	schema json.RawMessage
	// free is JSON mode without a schema (OpenAI json_object, Gemini
	// application/json alone): the answer is {"mock":"<word>"}.
	free bool
	// enumText is Gemini's text/x.enum: the answer is the bare enum value,
	// not a JSON string.
	enumText bool
}

// text is the whole answer for the mock whose strings read word.
func (f *jsonFormat) text(word string) string {
	if f.free {
		return `{"mock":` + string(appendJSONString(nil, word)) + `}`
	}
	out := jsonInstance(f.schema, word)
	if f.enumText {
		var s string
		if json.Unmarshal(out, &s) == nil {
			return s
		}
	}
	return string(out)
}

// schemaWord is the string the mock named name writes into JSON answers.
func schemaWord(name string) string {
	if name == "" {
		return "mock"
	}
	return name
}

// Bounds of the generator. Whatever the schema, the answer is valid JSON,
// at most about schemaMaxBytes plus one enum or const value copied from
// the schema, produced in time linear in the schema and the node budget.
const (
	// schemaMaxRefs: $ref expansions on one path before values turn
	// minimal (null where allowed, only required properties, minItems
	// items), so recursive schemas end.
	schemaMaxRefs = 8
	// schemaMaxDepth: nesting past which a value is a bare leaf.
	schemaMaxDepth = 64
	// schemaSoftNodes: values generated before the rest turn minimal.
	schemaSoftNodes = 512
	// schemaHardNodes and schemaMaxBytes: past either, objects and arrays
	// take no more members (the answer stays valid JSON, though no longer
	// necessarily valid for the schema).
	schemaHardNodes = 8192
	schemaMaxBytes  = 256 << 10
	// schemaMaxItems caps how many items minItems can ask for.
	schemaMaxItems = 3
	// schemaMaxString caps how long minLength can make a string.
	schemaMaxString = 4096
	// schemaMaxHops caps $ref-to-$ref chains and allOf flattening.
	schemaMaxHops = 16
	// schemaMaxParts caps the schemas one allOf merges.
	schemaMaxParts = 256
	// schemaMaxParseDepth is encoding/json's own nesting limit; a schema
	// nested deeper (only Bedrock's schema string can be) is no schema.
	schemaMaxParseDepth = 10000
)

// jsonInstance returns a compact JSON value valid against schema (when the
// schema can be met within the bounds above), with strings derived from
// word. An empty, null or unparsable schema means any JSON: {}. Supported:
// type (also arrays of types; OpenAPI's upper-case names), properties,
// required, propertyOrdering, items, prefixItems (and draft 4 tuples),
// minItems/maxItems, uniqueItems, enum, const, anyOf, oneOf, allOf, $ref
// (JSON pointers into the schema: #/$defs/X, #/definitions/X, #), nullable,
// format, minLength/maxLength, minimum/maximum (exclusive too), multipleOf.
// Every listed property is written (strict OpenAI schemas require them
// all), in schema order; additionalProperties only gives the schema of a
// required property that is not listed; pattern is ignored.
func jsonInstance(schema []byte, word string) []byte {
	if word == "" {
		word = "mock"
	}
	g := &schemaGen{word: word, infos: map[*jval]*schemaInfo{}}
	g.root = parseSchema(schema)
	g.value(g.root, 0, 0, false)
	return g.out
}

// jval is a parsed JSON value that keeps object keys in order.
type jval struct {
	kind byte // 'n' null, 'b' bool, 'd' number, 's' string, 'a' array, 'o' object
	b    bool
	s    string // a string, or a number's literal
	arr  []*jval
	keys []string // object keys, first occurrence order
	obj  map[string]*jval
}

func (v *jval) get(k string) *jval {
	if v == nil || v.kind != 'o' {
		return nil
	}
	return v.obj[k]
}

func (v *jval) set(k string, e *jval) {
	if _, ok := v.obj[k]; !ok {
		v.keys = append(v.keys, k)
	}
	v.obj[k] = e
}

func newObject() *jval { return &jval{kind: 'o', obj: map[string]*jval{}} }

// parseSchema parses a schema; nil when it is empty or not JSON.
func parseSchema(b []byte) *jval {
	if len(bytes.TrimSpace(b)) == 0 || !json.Valid(b) { // Valid also bounds the nesting
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := readJSON(dec, 0)
	if err != nil {
		return nil
	}
	return v
}

var errSchema = errors.New("mock: bad schema")

func readJSON(dec *json.Decoder, depth int) (*jval, error) {
	if depth > schemaMaxParseDepth {
		return nil, errSchema
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errSchema
				}
				e, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.set(k, e)
			}
			_, err := dec.Token() // '}'
			return v, err
		case '[':
			v := &jval{kind: 'a'}
			for dec.More() {
				e, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			_, err := dec.Token() // ']'
			return v, err
		}
		return nil, errSchema
	case string:
		return &jval{kind: 's', s: t}, nil
	case json.Number:
		return &jval{kind: 'd', s: string(t)}, nil
	case bool:
		return &jval{kind: 'b', b: t}, nil
	case nil:
		return &jval{kind: 'n'}, nil
	}
	return nil, errSchema
}

// appendJValue writes v as compact JSON.
func appendJValue(out []byte, v *jval) []byte {
	if v == nil {
		return append(out, "null"...)
	}
	switch v.kind {
	case 'b':
		return strconv.AppendBool(out, v.b)
	case 'd':
		return append(out, v.s...)
	case 's':
		return appendJSONString(out, v.s)
	case 'a':
		out = append(out, '[')
		for i, e := range v.arr {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJValue(out, e)
		}
		return append(out, ']')
	case 'o':
		out = append(out, '{')
		for i, k := range v.keys {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSONString(out, k)
			out = append(out, ':')
			out = appendJValue(out, v.obj[k])
		}
		return append(out, '}')
	}
	return append(out, "null"...)
}

// appendJSONString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out = append(out, '\\', c)
			case c == '\n':
				out = append(out, '\\', 'n')
			case c == '\r':
				out = append(out, '\\', 'r')
			case c == '\t':
				out = append(out, '\\', 't')
			case c < 0x20:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, `\ufffd`...)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return append(out, '"')
}

// schemaInfo is what the generator needs of one schema node, worked out
// once per node.
type schemaInfo struct {
	ref      *jval // resolved $ref target
	constV   *jval
	hasConst bool
	enumV    *jval // the first enum value
	hasEnum  bool
	allOf    *jval // the node merged with its allOf branches
	anyOf    bool  // has anyOf or oneOf
	branch   *jval // the first non-null branch merged with the node; nil: all null
	nullOK   bool  // null is valid
	typ      string

	props    []schemaProp // every listed property, then required ones not listed
	required []schemaProp // required properties only

	prefix             []*jval
	items              *jval
	noExtra            bool // items (or additionalItems) is false
	minItems, maxItems int  // -1: none
	unique             bool

	minLen, maxLen int // -1: none
	format         string

	lo, hi       float64
	hasLo, hasHi bool
	exLo, exHi   bool
	multipleOf   float64
}

type schemaProp struct {
	name   string
	schema *jval
}

type schemaGen struct {
	root  *jval
	word  string
	out   []byte
	nodes int
	infos map[*jval]*schemaInfo
}

func (g *schemaGen) hard() bool { return g.nodes >= schemaHardNodes || len(g.out) >= schemaMaxBytes }

// value writes an instance of s. minimal asks for the smallest valid value.
func (g *schemaGen) value(s *jval, depth, refs int, minimal bool) {
	if depth > schemaMaxDepth || g.hard() {
		g.leaf(s)
		return
	}
	g.nodes++
	if refs > schemaMaxRefs || g.nodes > schemaSoftNodes {
		minimal = true
	}
	in := g.info(s)
	switch {
	case minimal && in.nullOK:
		g.out = append(g.out, "null"...)
	case in.ref != nil:
		g.value(in.ref, depth+1, refs+1, minimal)
	case in.hasConst:
		g.out = appendJValue(g.out, in.constV)
	case in.hasEnum:
		g.out = appendJValue(g.out, in.enumV)
	case in.allOf != nil:
		g.value(in.allOf, depth+1, refs, minimal)
	case in.anyOf && in.branch == nil:
		g.out = append(g.out, "null"...)
	case in.anyOf:
		g.value(in.branch, depth+1, refs, minimal)
	default:
		g.typed(in, depth, refs, minimal)
	}
}

func (g *schemaGen) typed(in *schemaInfo, depth, refs int, minimal bool) {
	switch in.typ {
	case "null":
		g.out = append(g.out, "null"...)
	case "boolean":
		g.out = strconv.AppendBool(g.out, !minimal)
	case "integer", "number":
		g.out = appendNumber(g.out, in.number(in.typ == "integer", minimal))
	case "string":
		g.out = appendJSONString(g.out, in.str(g.word, minimal))
	case "array":
		g.out = append(g.out, '[')
		n := in.arrayLen(minimal)
		for i := range n {
			if g.hard() {
				break
			}
			if i > 0 {
				g.out = append(g.out, ',')
			}
			item := in.items
			if i < len(in.prefix) {
				item = in.prefix[i]
			}
			g.value(item, depth+1, refs, minimal)
		}
		g.out = append(g.out, ']')
	case "object":
		props := in.props
		if minimal {
			props = in.required
		}
		g.out = append(g.out, '{')
		for i, p := range props {
			if g.hard() {
				break
			}
			if i > 0 {
				g.out = append(g.out, ',')
			}
			g.out = appendJSONString(g.out, p.name)
			g.out = append(g.out, ':')
			g.value(p.schema, depth+1, refs, minimal)
		}
		g.out = append(g.out, '}')
	default: // any JSON
		g.out = append(g.out, "{}"...)
	}
}

// leaf writes a value of s without looking into its members.
func (g *schemaGen) leaf(s *jval) {
	in := g.info(s)
	for i := 0; in.ref != nil && i < schemaMaxHops; i++ {
		in = g.info(in.ref)
	}
	switch {
	case in.nullOK:
		g.out = append(g.out, "null"...)
	case in.hasConst:
		g.out = appendJValue(g.out, in.constV)
	case in.hasEnum:
		g.out = appendJValue(g.out, in.enumV)
	case in.typ == "array":
		g.out = append(g.out, "[]"...)
	case in.typ == "object" || in.typ == "":
		g.out = append(g.out, "{}"...)
	default:
		g.typed(in, schemaMaxDepth, 0, true)
	}
}

func (g *schemaGen) info(s *jval) *schemaInfo {
	if in, ok := g.infos[s]; ok {
		return in
	}
	in := g.describe(s)
	g.infos[s] = in
	return in
}

var schemaTypes = map[string]bool{"null": true, "boolean": true, "integer": true, "number": true, "string": true, "array": true, "object": true}

func (g *schemaGen) describe(s *jval) *schemaInfo {
	in := &schemaInfo{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	if s == nil {
		return in // any
	}
	switch s.kind {
	case 'o':
	case 'b':
		if !s.b { // the false schema: nothing is valid; null is as good as any
			in.typ, in.nullOK = "null", true
		}
		return in
	default:
		return in
	}
	in.ref = g.resolve(s)
	if v := s.get("const"); v != nil {
		in.constV, in.hasConst = v, true
	}
	if v := s.get("enum"); v != nil && v.kind == 'a' && len(v.arr) > 0 {
		in.enumV, in.hasEnum = v.arr[0], true
	}
	in.nullOK = directNull(s, true)
	if all := s.get("allOf"); all != nil && all.kind == 'a' {
		// Every part is flattened: their allOf and $ref are already in.
		in.allOf = mergeSchemas(g.flatten(s, 0, nil), func(_ int, k string) bool { return k == "allOf" || k == "$ref" })
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts := s.get(key)
		if alts == nil || alts.kind != 'a' {
			continue
		}
		in.anyOf = true
		for _, b := range alts.arr {
			if g.onlyNull(b) {
				in.nullOK = true
				continue
			}
			if in.branch == nil {
				// The node's own keywords (but this combinator, and a $ref
				// that resolved nowhere) apply to the branch too.
				in.branch = mergeSchemas([]*jval{s, b}, func(part int, k string) bool { return part == 0 && (k == key || k == "$ref") })
			}
		}
		break
	}
	if t := s.get("type"); t != nil {
		switch t.kind {
		case 's':
			in.typ = schemaType(t.s)
		case 'a':
			for _, e := range t.arr {
				if e.kind != 's' {
					continue
				}
				switch name := schemaType(e.s); {
				case name == "null":
					in.nullOK = true
				case name != "" && (in.typ == "" || in.typ == "null"):
					in.typ = name
				}
			}
			if in.typ == "" && in.nullOK {
				in.typ = "null"
			}
		}
	}
	if in.typ == "" {
		in.typ = inferType(s)
	}
	switch in.typ {
	case "object":
		g.describeObject(s, in)
	case "array":
		describeArray(s, in)
	case "string":
		in.minLen, in.maxLen = count(s.get("minLength")), count(s.get("maxLength"))
		if f := s.get("format"); f != nil && f.kind == 's' {
			in.format = strings.ToLower(f.s)
		}
	case "integer", "number":
		describeNumber(s, in)
	}
	return in
}

func schemaType(name string) string {
	name = strings.ToLower(name)
	if schemaTypes[name] {
		return name
	}
	return "" // TYPE_UNSPECIFIED and the unknown: any
}

// inferType guesses the type of a schema that names none from its keywords.
func inferType(s *jval) string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if s.get(k) != nil {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "propertyOrdering", "minProperties", "patternProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems", "additionalItems"):
		return "array"
	case has("minLength", "maxLength", "format", "pattern"):
		return "string"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return ""
}

// directNull reports whether s itself allows null: type null (alone or in
// an array), nullable, const null or a null in enum. With anyEnum false, enum
// must hold only null.
func directNull(s *jval, anyEnum bool) bool {
	if s == nil || s.kind != 'o' {
		return false
	}
	if n := s.get("nullable"); n != nil && n.kind == 'b' && n.b {
		return true
	}
	if c := s.get("const"); c != nil {
		return c.kind == 'n'
	}
	if e := s.get("enum"); e != nil && e.kind == 'a' {
		onlyNull := len(e.arr) > 0
		for _, v := range e.arr {
			if v.kind == 'n' && anyEnum {
				return true
			}
			onlyNull = onlyNull && v.kind == 'n'
		}
		return onlyNull
	}
	t := s.get("type")
	switch {
	case t == nil:
		return false
	case t.kind == 's':
		return strings.EqualFold(t.s, "null")
	case t.kind == 'a':
		for _, e := range t.arr {
			if e.kind == 's' && strings.EqualFold(e.s, "null") {
				return true
			}
		}
	}
	return false
}

// onlyNull reports whether the branch b admits null and nothing else, such
// as {"type":"null"}, following $refs.
func (g *schemaGen) onlyNull(b *jval) bool {
	for range schemaMaxHops {
		if b == nil || b.kind != 'o' {
			return false
		}
		r := g.resolve(b)
		if r == nil {
			break
		}
		b = r
	}
	if b == nil || b.kind != 'o' {
		return false
	}
	if c := b.get("const"); c != nil {
		return c.kind == 'n'
	}
	if e := b.get("enum"); e != nil && e.kind == 'a' {
		return directNull(b, false)
	}
	t := b.get("type")
	if t == nil {
		return false
	}
	switch t.kind {
	case 's':
		return strings.EqualFold(t.s, "null")
	case 'a':
		for _, e := range t.arr {
			if e.kind != 's' || !strings.EqualFold(e.s, "null") {
				return false
			}
		}
		return len(t.arr) > 0
	}
	return false
}

// resolve follows s's $ref, a JSON pointer into the root schema ("#",
// "#/$defs/X", "#/definitions/X", any other path); nil when s has none or
// it points nowhere.
func (g *schemaGen) resolve(s *jval) *jval {
	r := s.get("$ref")
	if r == nil || r.kind != 's' {
		return nil
	}
	ptr, ok := strings.CutPrefix(r.s, "#")
	if !ok {
		return nil // another document: unknown
	}
	cur := g.root
	if ptr == "" {
		return cur
	}
	if ptr[0] != '/' {
		return nil // a plain-name anchor
	}
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(percentDecode(tok), "~1", "/"), "~0", "~")
		switch {
		case cur == nil:
			return nil
		case cur.kind == 'o':
			cur = cur.obj[tok]
		case cur.kind == 'a':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.arr) {
				return nil
			}
			cur = cur.arr[i]
		default:
			return nil
		}
	}
	if cur == s {
		return nil // a schema that is its own reference says nothing
	}
	return cur
}

// percentDecode undoes URI escapes in a pointer fragment; malformed escapes
// stay as they are.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// flatten lists s and, through $refs and nested allOf, every schema its
// allOf makes it satisfy.
func (g *schemaGen) flatten(s *jval, hops int, out []*jval) []*jval {
	if s == nil || s.kind != 'o' || hops > schemaMaxHops || len(out) >= schemaMaxParts {
		return out
	}
	out = append(out, s)
	if r := g.resolve(s); r != nil {
		out = g.flatten(r, hops+1, out)
	}
	if all := s.get("allOf"); all != nil && all.kind == 'a' {
		for _, b := range all.arr {
			out = g.flatten(b, hops+1, out)
		}
	}
	return out
}

// mergeSchemas combines parts into one schema: properties and required are
// united, any other keyword comes from the first part that has it; skip
// leaves a part's keyword out.
func mergeSchemas(parts []*jval, skip func(part int, key string) bool) *jval {
	m := newObject()
	var props, req *jval
	seen := map[string]bool{}
	for i, p := range parts {
		if p == nil || p.kind != 'o' {
			continue
		}
		for _, k := range p.keys {
			if skip(i, k) {
				continue
			}
			v := p.obj[k]
			switch {
			case k == "properties" && v.kind == 'o':
				if props == nil {
					props = newObject()
					m.set(k, props)
				}
				for _, pk := range v.keys {
					if _, ok := props.obj[pk]; !ok {
						props.set(pk, v.obj[pk])
					}
				}
			case k == "required" && v.kind == 'a':
				if req == nil {
					req = &jval{kind: 'a'}
					m.set(k, req)
				}
				for _, r := range v.arr {
					if r.kind == 's' && !seen[r.s] {
						seen[r.s] = true
						req.arr = append(req.arr, r)
					}
				}
			default:
				if _, ok := m.obj[k]; !ok {
					m.set(k, v)
				}
			}
		}
	}
	return m
}

func (g *schemaGen) describeObject(s *jval, in *schemaInfo) {
	props := s.get("properties")
	if props != nil && props.kind != 'o' {
		props = nil
	}
	// A required property the schema does not list takes the schema of
	// additionalProperties, if it has one, else any value.
	extra := s.get("additionalProperties")
	if extra != nil && extra.kind != 'o' {
		extra = nil
	}
	listed := map[string]bool{}
	add := func(name string) {
		if listed[name] {
			return
		}
		listed[name] = true
		ps := props.get(name)
		if ps == nil {
			ps = extra
		}
		in.props = append(in.props, schemaProp{name, ps})
	}
	// Gemini's propertyOrdering comes first, then the schema's order.
	if po := s.get("propertyOrdering"); po != nil && po.kind == 'a' && props != nil {
		for _, e := range po.arr {
			if e.kind == 's' && props.obj[e.s] != nil {
				add(e.s)
			}
		}
	}
	if props != nil {
		for _, k := range props.keys {
			add(k)
		}
	}
	required := map[string]bool{}
	if r := s.get("required"); r != nil && r.kind == 'a' {
		for _, e := range r.arr {
			if e.kind == 's' {
				required[e.s] = true
				add(e.s) // required but not listed: any value
			}
		}
	}
	for _, p := range in.props {
		if required[p.name] {
			in.required = append(in.required, p)
		}
	}
}

func describeArray(s *jval, in *schemaInfo) {
	in.minItems, in.maxItems = count(s.get("minItems")), count(s.get("maxItems"))
	if u := s.get("uniqueItems"); u != nil && u.kind == 'b' {
		in.unique = u.b
	}
	items := s.get("items")
	if p := s.get("prefixItems"); p != nil && p.kind == 'a' {
		in.prefix = p.arr
	} else if items != nil && items.kind == 'a' { // draft 4 tuples
		in.prefix, items = items.arr, s.get("additionalItems")
	}
	switch {
	case items == nil:
	case items.kind == 'b':
		in.noExtra = !items.b
	default:
		in.items = items
	}
}

// arrayLen is how many items to write: one (none when minimal), or as many
// as minItems (at most schemaMaxItems) or the tuple asks for.
func (in *schemaInfo) arrayLen(minimal bool) int {
	n := 1
	if minimal {
		n = 0
	}
	if in.minItems > n {
		n = in.minItems
	}
	n = min(n, max(schemaMaxItems, len(in.prefix)))
	if !minimal && len(in.prefix) > n {
		n = len(in.prefix)
	}
	if in.noExtra && n > len(in.prefix) {
		n = len(in.prefix)
	}
	if in.unique && n > 1 && in.minItems <= 1 && len(in.prefix) <= 1 {
		n = 1
	}
	if in.maxItems >= 0 && n > in.maxItems {
		n = in.maxItems
	}
	return n
}

// count reads a non-negative count: a JSON number or, as Google's REST
// mapping writes int64 fields, a numeric string; -1 when absent or bad.
func count(v *jval) int {
	if v == nil || v.kind != 'd' && v.kind != 's' {
		return -1
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil || f < 0 || math.IsNaN(f) {
		return -1
	}
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Ceil(f))
}

func numberOf(v *jval) (float64, bool) {
	if v == nil || v.kind != 'd' && v.kind != 's' {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func describeNumber(s *jval, in *schemaInfo) {
	in.lo, in.hasLo = numberOf(s.get("minimum"))
	in.hi, in.hasHi = numberOf(s.get("maximum"))
	switch ex := s.get("exclusiveMinimum"); {
	case ex != nil && ex.kind == 'b': // draft 4
		in.exLo = ex.b && in.hasLo
	default:
		if v, ok := numberOf(ex); ok && (!in.hasLo || v >= in.lo) {
			in.lo, in.hasLo, in.exLo = v, true, true
		}
	}
	switch ex := s.get("exclusiveMaximum"); {
	case ex != nil && ex.kind == 'b':
		in.exHi = ex.b && in.hasHi
	default:
		if v, ok := numberOf(ex); ok && (!in.hasHi || v <= in.hi) {
			in.hi, in.hasHi, in.exHi = v, true, true
		}
	}
	if m, ok := numberOf(s.get("multipleOf")); ok && m > 0 {
		in.multipleOf = m
	}
}

// number picks 1 (0 when minimal) or, when that is out of range, a value
// the bounds and multipleOf allow.
func (in *schemaInfo) number(integer, minimal bool) float64 {
	ok := func(x float64) bool {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return false
		case in.hasLo && (x < in.lo || in.exLo && x == in.lo):
			return false
		case in.hasHi && (x > in.hi || in.exHi && x == in.hi):
			return false
		case integer && x != math.Trunc(x):
			return false
		}
		if in.multipleOf > 0 {
			q := x / in.multipleOf
			if math.Abs(q-math.Round(q)) > 1e-9 {
				return false
			}
		}
		return true
	}
	start := 1.0
	if minimal {
		start = 0
	}
	cands := []float64{start}
	step := 1.0
	if in.multipleOf > 0 {
		step = in.multipleOf
		if integer && step != math.Trunc(step) {
			step = math.Ceil(step)
		}
	}
	if in.hasLo {
		c := in.lo
		if in.multipleOf > 0 || integer {
			c = math.Ceil(in.lo/step) * step
		}
		if in.exLo && c == in.lo {
			c += step
		}
		cands = append(cands, c)
	}
	if in.hasHi {
		c := in.hi
		if in.multipleOf > 0 || integer {
			c = math.Floor(in.hi/step) * step
		}
		if in.exHi && c == in.hi {
			c -= step
		}
		cands = append(cands, c)
	}
	if in.hasLo && in.hasHi {
		mid := in.lo + (in.hi-in.lo)/2
		cands = append(cands, mid, math.Floor(mid), math.Ceil(mid))
	}
	if in.multipleOf > 0 {
		cands = append(cands, step, 0)
	}
	for _, c := range cands {
		if ok(c) {
			return c
		}
	}
	for _, c := range cands[1:] { // nothing fits: stay near the bounds
		if !math.IsNaN(c) && !math.IsInf(c, 0) {
			return c
		}
	}
	return start
}

func appendNumber(out []byte, f float64) []byte {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(out, '0')
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.AppendFloat(out, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(out, f, 'g', -1, 64)
}

// formatValues are plausible values of the string formats SDK schemas use
// (what zod's own checks accept, too).
var formatValues = map[string]string{
	"date-time":     "2024-01-01T00:00:00Z",
	"date":          "2024-01-01",
	"time":          "00:00:00",
	"duration":      "P1D",
	"email":         "mock@example.com",
	"idn-email":     "mock@example.com",
	"uri":           "https://example.com/mock",
	"url":           "https://example.com/mock",
	"iri":           "https://example.com/mock",
	"uri-reference": "https://example.com/mock",
	"iri-reference": "https://example.com/mock",
	"uuid":          "00000000-0000-4000-8000-000000000000",
	"hostname":      "example.com",
	"idn-hostname":  "example.com",
	"ipv4":          "192.0.2.1",
	"ipv6":          "2001:db8::1",
	"byte":          "bW9jaw==",
	"json-pointer":  "/mock",
}

// str is the word (empty when minimal), padded to minLength and cut to
// maxLength, or the format's value.
func (in *schemaInfo) str(word string, minimal bool) string {
	if v, ok := formatValues[in.format]; ok {
		return v
	}
	s := word
	if minimal {
		s = ""
	}
	if want := min(in.minLen, schemaMaxString); want > 0 && utf8.RuneCountInString(s) < want {
		var b strings.Builder
		b.WriteString(s)
		n := utf8.RuneCountInString(s)
		for n < want {
			for _, r := range word {
				if n == want {
					break
				}
				b.WriteRune(r)
				n++
			}
		}
		s = b.String()
	}
	if in.maxLen >= 0 && utf8.RuneCountInString(s) > in.maxLen {
		n := 0
		for i := range s {
			if n == in.maxLen {
				s = s[:i]
				break
			}
			n++
		}
	}
	return s
}
