package quality

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"strings"
	"sync"
)

// A schema, as far as quality signals read one: the JSON Schema subset
// that costs little to check (type, properties, required,
// additionalProperties: false, items, string enum), compiled once per
// answer from the request's schema. Anything else ($ref, anyOf, oneOf,
// allOf, not, patterns, bounds) is not checked: a node carrying one
// accepts any value, so conformance is never reported false for a rule
// spillway did not check. Gemini's OpenAPI subset (upper-case types,
// nullable) reads the same.

// Bounds of schema compilation and checking.
const (
	// MaxSchemaBytes: a larger schema is not compiled (conformance and
	// field population are not measured for its answers).
	MaxSchemaBytes = 64 << 10
	// maxSchemaNodes bounds a compiled schema.
	maxSchemaNodes = 1024
	// maxSchemaDepth bounds nesting, in the schema and in the check.
	maxSchemaDepth = 32
	// MaxFieldDepth bounds a field path's nesting (a.b.c.d).
	MaxFieldDepth = 4
	// MaxFieldsPerAnswer bounds the field paths one schema yields.
	MaxFieldsPerAnswer = 24
	// MaxPathBytes bounds a field path; a longer one is not tracked.
	MaxPathBytes = 128
)

// JSON types as a bit set.
const (
	tObject uint8 = 1 << iota
	tArray
	tString
	tNumber
	tInteger
	tBoolean
	tNull
)

type schemaNode struct {
	// types allowed; 0: any.
	types    uint8
	props    map[string]*schemaNode
	required []string
	noExtra  bool
	items    *schemaNode
	enum     []string // string enum; nil: none
	// loose: the node has rules that are not checked (any value passes).
	loose bool
}

// rawSchema is what compilation reads of one schema object.
type rawSchema struct {
	Type                 json.RawMessage            `json:"type"`
	Nullable             bool                       `json:"nullable"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	Items                json.RawMessage            `json:"items"`
	Enum                 []json.RawMessage          `json:"enum"`
	Ref                  json.RawMessage            `json:"$ref"`
	AnyOf                json.RawMessage            `json:"anyOf"`
	OneOf                json.RawMessage            `json:"oneOf"`
	AllOf                json.RawMessage            `json:"allOf"`
	Not                  json.RawMessage            `json:"not"`
}

// compileSchema compiles raw; nil when it is too large, not an object,
// or past the bounds (nothing is measured against it then).
func compileSchema(raw []byte) *schemaNode {
	if len(raw) == 0 || len(raw) > MaxSchemaBytes {
		return nil
	}
	budget := maxSchemaNodes
	return compileNode(raw, 0, &budget)
}

func compileNode(raw []byte, depth int, budget *int) *schemaNode {
	*budget--
	if *budget < 0 || depth > maxSchemaDepth {
		return nil
	}
	var r rawSchema
	if json.Unmarshal(raw, &r) != nil {
		return nil
	}
	n := &schemaNode{types: parseTypes(r.Type)}
	if n.types != 0 && r.Nullable {
		n.types |= tNull
	}
	if len(r.Ref) > 0 || len(r.AnyOf) > 0 || len(r.OneOf) > 0 || len(r.AllOf) > 0 || len(r.Not) > 0 {
		n.loose = true
		return n
	}
	if len(r.Properties) > 0 {
		n.props = make(map[string]*schemaNode, len(r.Properties))
		for k, v := range r.Properties {
			c := compileNode(v, depth+1, budget)
			if c == nil {
				if *budget < 0 {
					return nil
				}
				c = &schemaNode{loose: true}
			}
			n.props[k] = c
		}
	}
	n.required = r.Required
	n.noExtra = strings.TrimSpace(string(r.AdditionalProperties)) == "false"
	if len(r.Items) > 0 && r.Items[0] == '{' {
		n.items = compileNode(r.Items, depth+1, budget)
		if n.items == nil && *budget < 0 {
			return nil
		}
	}
	for _, e := range r.Enum {
		var s string
		if json.Unmarshal(e, &s) != nil {
			n.enum = nil // a non-string enum is not checked
			break
		}
		n.enum = append(n.enum, s)
	}
	return n
}

func parseTypes(raw json.RawMessage) uint8 {
	if len(raw) == 0 {
		return 0
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return typeBit(one)
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return 0
	}
	var t uint8
	for _, s := range many {
		b := typeBit(s)
		if b == 0 {
			return 0 // an unknown type name: accept anything
		}
		t |= b
	}
	return t
}

func typeBit(s string) uint8 {
	switch strings.ToLower(s) {
	case "object":
		return tObject
	case "array":
		return tArray
	case "string":
		return tString
	case "number":
		return tNumber | tInteger
	case "integer":
		return tInteger
	case "boolean":
		return tBoolean
	case "null":
		return tNull
	}
	return 0
}

// conforms checks v (as encoding/json decodes into any) against n.
func (n *schemaNode) conforms(v any, depth int) bool {
	if n == nil || n.loose || depth > maxSchemaDepth {
		return true
	}
	if n.types != 0 && n.types&typeOf(v) == 0 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range n.required {
			if _, ok := x[k]; !ok {
				return false
			}
		}
		for k, e := range x {
			c, ok := n.props[k]
			if !ok {
				if n.noExtra {
					return false
				}
				continue
			}
			if !c.conforms(e, depth+1) {
				return false
			}
		}
	case []any:
		if n.items != nil {
			for _, e := range x {
				if !n.items.conforms(e, depth+1) {
					return false
				}
			}
		}
	case string:
		if n.enum != nil {
			for _, s := range n.enum {
				if s == x {
					return true
				}
			}
			return false
		}
	}
	return true
}

func typeOf(v any) uint8 {
	switch x := v.(type) {
	case map[string]any:
		return tObject
	case []any:
		return tArray
	case string:
		return tString
	case float64:
		// JSON Schema counts 1.0 as an integer too.
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return tInteger
		}
		return tNumber
	case bool:
		return tBoolean
	case nil:
		return tNull
	}
	return 0
}

// fieldPaths lists the schema's declared field paths, in a stable order
// (sorted per level), depth first: "a", "a.b", "items[].name". At most
// MaxFieldsPerAnswer, none deeper than MaxFieldDepth or longer than
// MaxPathBytes.
func (n *schemaNode) fieldPaths() []string {
	var out []string
	n.collect("", 0, &out)
	return out
}

func (n *schemaNode) collect(prefix string, depth int, out *[]string) {
	if n == nil || depth >= MaxFieldDepth {
		return
	}
	if n.items != nil && n.items.props != nil {
		n.items.collect(prefix+"[]", depth, out)
	}
	if n.props == nil {
		return
	}
	for _, k := range sortedKeys(n.props) {
		if len(*out) >= MaxFieldsPerAnswer {
			return
		}
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if len(p) > MaxPathBytes || strings.ContainsAny(k, ".[]") {
			continue // unreadable as a path: not tracked
		}
		*out = append(*out, p)
		n.props[k].collect(p, depth+1, out)
	}
}

func sortedKeys(m map[string]*schemaNode) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	// insertion sort: few keys, no import
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

// populated reads one field path in v: observed is false when the path's
// parent is not there (a missing parent object, an empty or missing
// array), populated true when the value is present and not null, "", []
// or {}. For "a[].b", every element of a must populate b.
func populated(v any, path string) (observed, ok bool) {
	return walkPath(v, path, 0)
}

func walkPath(v any, path string, depth int) (observed, ok bool) {
	if depth > MaxFieldDepth*2 {
		return false, false
	}
	if strings.HasPrefix(path, "[]") {
		arr, isArr := v.([]any)
		if !isArr || len(arr) == 0 {
			return false, false
		}
		rest := strings.TrimPrefix(path[2:], ".")
		all := true
		for _, e := range arr {
			obs, pop := walkPath(e, rest, depth+1)
			if !obs {
				return false, false
			}
			all = all && pop
		}
		return true, all
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return false, false
	}
	key, rest := path, ""
	if i := strings.IndexAny(path, ".["); i >= 0 {
		key, rest = path[:i], strings.TrimPrefix(path[i:], ".")
	}
	e, present := obj[key]
	if rest == "" {
		return true, present && filled(e)
	}
	if !present {
		return false, false
	}
	return walkPath(e, rest, depth+1)
}

func filled(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// compiled is a schema compiled once, with its field paths: immutable,
// shared by every answer whose request carries the same schema.
type compiled struct {
	raw   []byte
	node  *schemaNode
	paths []string
}

// Bounds of the schema cache: past either, it starts over.
const (
	maxCachedSchemas     = 256
	maxCachedSchemaBytes = 4 << 20
)

// schemaCache keeps compiled schemas by content: requests of one
// workload carry the same schema, and compiling it costs several times
// checking an answer against it. Safe for concurrent use.
type schemaCache struct {
	seed  maphash.Seed
	mu    sync.Mutex
	byKey map[uint64]*compiled
	bytes int
}

func newSchemaCache() *schemaCache {
	return &schemaCache{seed: maphash.MakeSeed(), byKey: map[uint64]*compiled{}}
}

// get compiles raw, or finds it compiled; nil when it does not compile
// (nil cache: compile every time).
func (c *schemaCache) get(raw []byte) *compiled {
	if len(raw) == 0 || len(raw) > MaxSchemaBytes {
		return nil
	}
	if c == nil {
		return compileEntry(raw)
	}
	k := maphash.Bytes(c.seed, raw)
	c.mu.Lock()
	e, ok := c.byKey[k]
	c.mu.Unlock()
	if ok && string(e.raw) == string(raw) {
		return e
	}
	e = compileEntry(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) >= maxCachedSchemas || c.bytes+len(raw) > maxCachedSchemaBytes {
		clear(c.byKey)
		c.bytes = 0
	}
	c.byKey[k] = e
	c.bytes += len(raw)
	return e
}

// compileEntry compiles raw into a cache entry (node nil: it does not
// compile; remembered so, too).
func compileEntry(raw []byte) *compiled {
	e := &compiled{raw: append([]byte(nil), raw...), node: compileSchema(raw)}
	if e.node != nil {
		e.paths = e.node.fieldPaths()
	}
	return e
}
