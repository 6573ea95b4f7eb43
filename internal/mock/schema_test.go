package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkInstance validates instance against schema with schemaValidator and
// fails the test on the first violation.
func checkInstance(t testing.TB, schema string, instance []byte) {
	t.Helper()
	if !json.Valid(instance) {
		t.Fatalf("not JSON: %s", instance)
	}
	var s, x any
	dec := json.NewDecoder(strings.NewReader(schema))
	dec.UseNumber()
	if strings.TrimSpace(schema) != "" {
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("schema: %v", err)
		}
	}
	dec = json.NewDecoder(bytes.NewReader(instance))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	v := schemaValidator{root: s}
	if err := v.check(s, x, "$", 0); err != nil {
		t.Fatalf("%s\ndoes not validate against\n%s:\n%v", instance, schema, err)
	}
}

// schemaValidator is a small JSON Schema validator for the subset the
// generator supports, written apart from it: type (and OpenAPI's upper-case
// names, nullable), properties, required, additionalProperties, items,
// prefixItems, min/maxItems, uniqueItems, enum, const, anyOf, oneOf
// (exactly one), allOf, $ref, format, pattern (when Go can compile it),
// min/maxLength, minimum/maximum (exclusive too), multipleOf.
type schemaValidator struct{ root any }

func (v schemaValidator) check(schema, x any, path string, depth int) error {
	if depth > 500 {
		return fmt.Errorf("%s: validator recursion", path)
	}
	var s map[string]any
	switch sv := schema.(type) {
	case nil:
		return nil
	case bool:
		if !sv {
			return fmt.Errorf("%s: the false schema", path)
		}
		return nil
	case map[string]any:
		s = sv
	default:
		return nil
	}
	if x == nil && s["nullable"] == true {
		return nil
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := v.resolve(ref)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if err := v.check(target, x, path, depth+1); err != nil {
			return err
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, x) {
		return fmt.Errorf("%s: %v is not the const %v", path, x, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, ev := range e {
			found = found || jsonEqual(ev, x)
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum %v", path, x, e)
		}
	}
	if t, ok := s["type"]; ok {
		if err := typeCheck(t, x); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		for i, b := range all {
			if err := v.check(b, x, path, depth+1); err != nil {
				return fmt.Errorf("allOf[%d]: %w", i, err)
			}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, b := range alts {
			if err := v.check(b, x, path, depth+1); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) == len(alts) {
			return fmt.Errorf("%s: no anyOf branch: %s", path, strings.Join(errs, "; "))
		}
	}
	if alts, ok := s["oneOf"].([]any); ok {
		n := 0
		for _, b := range alts {
			if v.check(b, x, path, depth+1) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %d oneOf branches match", path, n)
		}
	}
	switch xv := x.(type) {
	case map[string]any:
		return v.object(s, xv, path, depth)
	case []any:
		return v.array(s, xv, path, depth)
	case string:
		return stringCheck(s, xv, path)
	case json.Number:
		return numberCheck(s, xv, path)
	}
	return nil
}

func (v schemaValidator) object(s map[string]any, x map[string]any, path string, depth int) error {
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := x[r.(string)]; !ok {
				return fmt.Errorf("%s: required %q missing", path, r)
			}
		}
	}
	for k, val := range x {
		if ps, ok := props[k]; ok {
			if err := v.check(ps, val, path+"."+k, depth+1); err != nil {
				return err
			}
			continue
		}
		if ap, ok := s["additionalProperties"]; ok {
			if err := v.check(ap, val, path+"."+k, depth+1); err != nil {
				return fmt.Errorf("%s: additional property %q: %w", path, k, err)
			}
		}
	}
	return nil
}

func (v schemaValidator) array(s map[string]any, x []any, path string, depth int) error {
	if n, ok := countOf(s["minItems"]); ok && len(x) < n {
		return fmt.Errorf("%s: %d items < minItems %d", path, len(x), n)
	}
	if n, ok := countOf(s["maxItems"]); ok && len(x) > n {
		return fmt.Errorf("%s: %d items > maxItems %d", path, len(x), n)
	}
	if s["uniqueItems"] == true {
		for i := range x {
			for j := range i {
				if jsonEqual(x[i], x[j]) {
					return fmt.Errorf("%s: items %d and %d are equal", path, j, i)
				}
			}
		}
	}
	prefix, _ := s["prefixItems"].([]any)
	for i, item := range x {
		var is any = s["items"]
		if i < len(prefix) {
			is = prefix[i]
		} else if _, has := s["items"]; !has {
			continue
		}
		if err := v.check(is, item, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

var emailRE = regexp.MustCompile(`^([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$`) // zod's, less its look-aheads
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

func stringCheck(s map[string]any, x, path string) error {
	n := utf8.RuneCountInString(x)
	if m, ok := countOf(s["minLength"]); ok && n < m {
		return fmt.Errorf("%s: %q shorter than %d", path, x, m)
	}
	if m, ok := countOf(s["maxLength"]); ok && n > m {
		return fmt.Errorf("%s: %q longer than %d", path, x, m)
	}
	if p, ok := s["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil && !re.MatchString(x) {
			return fmt.Errorf("%s: %q does not match %s", path, x, p)
		}
	}
	f, _ := s["format"].(string)
	var err error
	switch strings.ToLower(f) {
	case "date-time":
		_, err = time.Parse(time.RFC3339, x)
	case "date":
		_, err = time.Parse(time.DateOnly, x)
	case "time":
		_, err = time.Parse(time.TimeOnly, x)
	case "email":
		if !emailRE.MatchString(x) {
			err = fmt.Errorf("not an email")
		}
	case "uri", "url":
		var u *url.URL
		if u, err = url.Parse(x); err == nil && (u.Scheme == "" || u.Host == "") {
			err = fmt.Errorf("not absolute")
		}
	case "uuid":
		if !uuidRE.MatchString(x) {
			err = fmt.Errorf("not a uuid")
		}
	case "ipv4":
		if ip := net.ParseIP(x); ip == nil || ip.To4() == nil {
			err = fmt.Errorf("not ipv4")
		}
	case "ipv6":
		if ip := net.ParseIP(x); ip == nil || ip.To4() != nil {
			err = fmt.Errorf("not ipv6")
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %q is not a %s: %v", path, x, f, err)
	}
	return nil
}

func numberCheck(s map[string]any, x json.Number, path string) error {
	f, err := strconv.ParseFloat(string(x), 64)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	num := func(k string) (float64, bool) {
		n, ok := s[k].(json.Number)
		if !ok {
			return 0, false
		}
		v, err := n.Float64()
		return v, err == nil
	}
	if m, ok := num("minimum"); ok && (f < m || s["exclusiveMinimum"] == true && f == m) {
		return fmt.Errorf("%s: %v below minimum %v", path, f, m)
	}
	if m, ok := num("maximum"); ok && (f > m || s["exclusiveMaximum"] == true && f == m) {
		return fmt.Errorf("%s: %v above maximum %v", path, f, m)
	}
	if m, ok := num("exclusiveMinimum"); ok && f <= m {
		return fmt.Errorf("%s: %v not above %v", path, f, m)
	}
	if m, ok := num("exclusiveMaximum"); ok && f >= m {
		return fmt.Errorf("%s: %v not below %v", path, f, m)
	}
	if m, ok := num("multipleOf"); ok && m > 0 {
		if q := f / m; math.Abs(q-math.Round(q)) > 1e-9 {
			return fmt.Errorf("%s: %v not a multiple of %v", path, f, m)
		}
	}
	return nil
}

func typeCheck(t, x any) error {
	var names []string
	switch tv := t.(type) {
	case string:
		names = []string{tv}
	case []any:
		for _, n := range tv {
			names = append(names, n.(string))
		}
	}
	for _, n := range names {
		switch xv := x.(type) {
		case nil:
			if strings.EqualFold(n, "null") {
				return nil
			}
		case bool:
			if strings.EqualFold(n, "boolean") {
				return nil
			}
		case string:
			if strings.EqualFold(n, "string") {
				return nil
			}
		case json.Number:
			f, _ := xv.Float64()
			if strings.EqualFold(n, "number") || strings.EqualFold(n, "integer") && f == math.Trunc(f) {
				return nil
			}
		case []any:
			if strings.EqualFold(n, "array") {
				return nil
			}
		case map[string]any:
			if strings.EqualFold(n, "object") {
				return nil
			}
		}
	}
	return fmt.Errorf("%v is not of type %v", x, t)
}

func countOf(v any) (int, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.Atoi(string(n))
		return i, err == nil
	case string: // Google's int64 fields
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

func jsonEqual(a, b any) bool {
	if an, ok := a.(json.Number); ok {
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		af, _ := an.Float64()
		bf, _ := bn.Float64()
		return af == bf
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func (v schemaValidator) resolve(ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("external $ref %q", ref)
	}
	cur := v.root
	if ptr == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(c) {
				return nil, fmt.Errorf("$ref %q: bad index", ref)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("$ref %q points nowhere", ref)
		}
	}
	if cur == nil {
		return nil, fmt.Errorf("$ref %q points nowhere", ref)
	}
	return cur, nil
}

// Schemas as openai-node's zodResponseFormat and zod's toJSONSchema write
// them.
const (
	// zod v4: nullable as a type array or anyOf with null, $schema, strict
	// (every property required, additionalProperties false), formats with
	// zod's patterns, a literal as const.
	zodV4Schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": ["number", "null"]},
    "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "role": {"type": "string", "enum": ["admin", "user"]},
    "kind": {"type": "string", "const": "person"},
    "email": {"type": "string", "format": "email", "pattern": "^(?!\\.)(?!.*\\.\\.)([A-Za-z0-9_'+\\-\\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$"},
    "id": {"type": "string", "format": "uuid", "pattern": "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$"},
    "createdAt": {"type": "string", "format": "date-time", "pattern": "^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?(?:Z))$"},
    "score": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
    "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "address": {
      "type": "object",
      "properties": {"city": {"type": "string"}, "zip": {"type": "string", "minLength": 5, "maxLength": 5}},
      "required": ["city", "zip"],
      "additionalProperties": false
    }
  },
  "required": ["name", "age", "nickname", "role", "kind", "email", "id", "createdAt", "score", "ratio", "tags", "address"],
  "additionalProperties": false
}`
	zodV4Want = `{"name":"mock","age":1,"nickname":"mock","role":"admin","kind":"person","email":"mock@example.com","id":"00000000-0000-4000-8000-000000000000","createdAt":"2024-01-01T00:00:00Z","score":1,"ratio":0.5,"tags":["mock"],"address":{"city":"mock","zip":"mockm"}}`

	// zod v3 through zod-to-json-schema as openai-node vendors it:
	// nullable: true, definitions, $refs into them (also a path into a
	// definition), draft-07 $schema, a recursive type.
	zodV3Schema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string"},
    "priority": {"type": "number", "nullable": true},
    "due": {"type": "string", "format": "date", "nullable": true},
    "owner": {"$ref": "#/definitions/Person"},
    "reviewer": {"anyOf": [{"$ref": "#/definitions/Person"}, {"type": "null"}]},
    "ownerName": {"$ref": "#/definitions/Person/properties/name"},
    "category": {"$ref": "#/definitions/Category"}
  },
  "required": ["title", "priority", "due", "owner", "reviewer", "ownerName", "category"],
  "additionalProperties": false,
  "definitions": {
    "Person": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "admin": {"type": "boolean"}},
      "required": ["name", "admin"],
      "additionalProperties": false
    },
    "Category": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "subcategories": {"type": "array", "items": {"$ref": "#/definitions/Category"}}},
      "required": ["name", "subcategories"],
      "additionalProperties": false
    }
  },
  "$schema": "http://json-schema.org/draft-07/schema#"
}`

	// Gemini's responseSchema: the OpenAPI subset with upper-case types,
	// int64 counts as strings, propertyOrdering.
	geminiSchema = `{
  "type": "OBJECT",
  "properties": {
    "recipes": {
      "type": "ARRAY",
      "minItems": "2",
      "items": {
        "type": "OBJECT",
        "properties": {
          "recipeName": {"type": "STRING"},
          "minutes": {"type": "INTEGER", "minimum": 5},
          "vegan": {"type": "BOOLEAN"},
          "course": {"type": "STRING", "format": "enum", "enum": ["starter", "main"]},
          "notes": {"type": "STRING", "nullable": true}
        },
        "propertyOrdering": ["vegan", "recipeName"],
        "required": ["recipeName"]
      }
    },
    "when": {"type": "STRING", "format": "date-time"}
  },
  "required": ["recipes", "when"]
}`
	geminiWant = `{"recipes":[{"vegan":true,"recipeName":"mock","minutes":5,"course":"starter","notes":"mock"},{"vegan":true,"recipeName":"mock","minutes":5,"course":"starter","notes":"mock"}],"when":"2024-01-01T00:00:00Z"}`

	// A recursive tree: the recursion ends (minimal children) after
	// schemaMaxRefs expansions.
	treeSchema = `{"$defs":{"Node":{"type":"object","properties":{"value":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["value","children"],"additionalProperties":false}},"$ref":"#/$defs/Node"}`
)

func TestJSONInstance(t *testing.T) {
	tests := []struct {
		name, schema string
		want         string // "": only validated
	}{
		{"absent", ``, `{}`},
		{"empty", `{}`, `{}`},
		{"null", `null`, `{}`},
		{"true schema", `true`, `{}`},
		{"false schema", `false`, `null`},
		{"not JSON", `{"type":`, `{}`},
		{"string", `{"type":"string"}`, `"mock"`},
		{"integer", `{"type":"integer"}`, `1`},
		{"number", `{"type":"number"}`, `1`},
		{"boolean", `{"type":"boolean"}`, `true`},
		{"null type", `{"type":"null"}`, `null`},
		{"type array picks the first non-null", `{"type":["null","integer","string"]}`, `1`},
		{"only null in type array", `{"type":["null"]}`, `null`},
		{"upper-case types", `{"type":"OBJECT","properties":{"a":{"type":"NUMBER"}}}`, `{"a":1}`},
		{"unknown type is any", `{"type":"TYPE_UNSPECIFIED"}`, `{}`},
		{"properties in schema order", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"boolean"},"m":{"type":"null"}}}`, `{"z":"mock","a":true,"m":null}`},
		{"required not listed", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`, `{"a":"mock","b":{}}`},
		{"required not listed takes additionalProperties", `{"type":"object","required":["k"],"additionalProperties":{"type":"integer"}}`, `{"k":1}`},
		{"object inferred", `{"properties":{"a":{"const":3}}}`, `{"a":3}`},
		{"record", `{"type":"object","additionalProperties":{"type":"string"}}`, `{}`},
		{"escaped keys", `{"type":"object","properties":{"a\"b\\c\u0001":{"type":"string"},"日本":{"type":"string"}}}`, `{"a\"b\\c\u0001":"mock","日本":"mock"}`},
		{"enum first", `{"enum":[{"x":[1,2]},"b"]}`, `{"x":[1,2]}`},
		{"const wins", `{"const":"fixed","type":"string","maxLength":10}`, `"fixed"`},
		{"const null", `{"const":null}`, `null`},
		{"array one item", `{"type":"array","items":{"type":"integer"}}`, `[1]`},
		{"array minItems", `{"type":"array","items":{"type":"string"},"minItems":2}`, `["mock","mock"]`},
		{"array huge minItems", `{"type":"array","items":{"type":"boolean"},"minItems":1000000000}`, `[true,true,true]`},
		{"array maxItems 0", `{"type":"array","items":{"type":"string"},"maxItems":0}`, `[]`},
		{"array items false", `{"type":"array","items":false}`, `[]`},
		{"array of any", `{"type":"array"}`, `[{}]`},
		{"tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"},{"type":"boolean"},{"type":"null"}],"items":false,"minItems":4,"maxItems":4}`, `["mock",1,true,null]`},
		{"draft 4 tuple", `{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`, `["mock",1]`},
		{"unique items", `{"type":"array","items":{"type":"string"},"uniqueItems":true}`, `["mock"]`},
		{"anyOf first non-null", `{"anyOf":[{"type":"null"},{"type":"integer"},{"type":"string"}]}`, `1`},
		{"anyOf only null", `{"anyOf":[{"type":"null"}]}`, `null`},
		{"anyOf with siblings", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"anyOf":[{"properties":{"b":{"type":"integer"}},"required":["b"]}]}`, `{"a":"mock","b":1}`},
		{"oneOf", `{"oneOf":[{"type":"string","format":"email"},{"type":"integer"}]}`, `"mock@example.com"`},
		{"discriminated union", `{"anyOf":[{"type":"object","properties":{"kind":{"type":"string","const":"circle"},"r":{"type":"number"}},"required":["kind","r"],"additionalProperties":false},{"type":"object","properties":{"kind":{"type":"string","const":"square"},"side":{"type":"number"}},"required":["kind","side"],"additionalProperties":false}]}`, `{"kind":"circle","r":1}`},
		{"allOf merges objects", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}},"required":["b"]},{"$ref":"#/$defs/C"}],"$defs":{"C":{"properties":{"c":{"type":"integer","minimum":7}},"required":["c"]}}}`, `{"a":"mock","b":true,"c":7}`},
		{"allOf of strings", `{"allOf":[{"type":"string"},{"minLength":6}]}`, `"mockmo"`},
		{"nested allOf", `{"allOf":[{"allOf":[{"type":"object","properties":{"x":{"type":"string"}}}]},{"properties":{"y":{"type":"null"}}}]}`, `{"x":"mock","y":null}`},
		{"ref $defs", `{"$defs":{"A":{"type":"string","maxLength":2}},"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}`, `{"a":"mo"}`},
		{"ref definitions", `{"definitions":{"A":{"type":"integer","maximum":-3}},"$ref":"#/definitions/A"}`, `-3`},
		{"ref escaped pointer", `{"definitions":{"a/b~c":{"type":"boolean"}},"$ref":"#/definitions/a~1b~0c"}`, `true`},
		{"ref into an array", `{"$defs":{"L":[{"type":"string"},{"type":"integer"}]},"type":"object","properties":{"p":{"$ref":"#/$defs/L/1"}}}`, `{"p":1}`},
		{"ref nowhere", `{"$ref":"#/$defs/Missing","type":"integer"}`, `1`},
		{"ref to itself", `{"$ref":"#"}`, `{}`},
		{"ref loop", `{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"$ref":"#/$defs/A"}`, `{}`},
		{"recursive root", `{"type":"object","properties":{"n":{"type":"string"},"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["n","next"]}`, ``},
		{"recursive tree", treeSchema, ``},
		{"nullable object", `{"type":"object","nullable":true,"properties":{"a":{"type":"string"}}}`, `{"a":"mock"}`},
		{"format date-time", `{"type":"string","format":"date-time"}`, `"2024-01-01T00:00:00Z"`},
		{"format date", `{"type":"string","format":"date"}`, `"2024-01-01"`},
		{"format time", `{"type":"string","format":"time"}`, `"00:00:00"`},
		{"format email", `{"type":"string","format":"email"}`, `"mock@example.com"`},
		{"format uri", `{"type":"string","format":"uri"}`, `"https://example.com/mock"`},
		{"format uuid", `{"type":"string","format":"uuid"}`, `"00000000-0000-4000-8000-000000000000"`},
		{"format ipv4", `{"type":"string","format":"ipv4"}`, `"192.0.2.1"`},
		{"format ipv6", `{"type":"string","format":"ipv6"}`, `"2001:db8::1"`},
		{"format unknown", `{"type":"string","format":"x-custom"}`, `"mock"`},
		{"format upper case", `{"type":"STRING","format":"DATE-TIME"}`, `"2024-01-01T00:00:00Z"`},
		{"minLength pads", `{"type":"string","minLength":10}`, `"mockmockmo"`},
		{"maxLength cuts", `{"type":"string","maxLength":3}`, `"moc"`},
		{"maxLength 0", `{"type":"string","maxLength":0}`, `""`},
		{"minLength as a string", `{"type":"STRING","minLength":"5"}`, `"mockm"`},
		{"huge minLength is capped", `{"type":"string","minLength":99999999}`, `"` + strings.Repeat("mock", schemaMaxString/4) + `"`},
		{"minimum", `{"type":"integer","minimum":10}`, `10`},
		{"maximum", `{"type":"number","maximum":-0.5}`, `-0.5`},
		{"exclusive bounds", `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`, `0.5`},
		{"draft 4 exclusive", `{"type":"integer","minimum":1,"exclusiveMinimum":true}`, `2`},
		{"integer range", `{"type":"integer","minimum":2.5,"maximum":3.5}`, `3`},
		{"multipleOf", `{"type":"integer","multipleOf":7,"minimum":10}`, `14`},
		{"fractional multipleOf", `{"type":"number","multipleOf":0.25,"minimum":1.1}`, `1.25`},
		{"big bounds", `{"type":"integer","minimum":1e30}`, `1e+30`},
		{"string inferred from format", `{"format":"email"}`, `"mock@example.com"`},
		{"number inferred", `{"minimum":3}`, `3`},
		{"array inferred", `{"items":{"type":"string"}}`, `["mock"]`},
		{"zod v4", zodV4Schema, zodV4Want},
		{"zod v3", zodV3Schema, ``},
		{"gemini responseSchema", geminiSchema, geminiWant},
	}
	// These schemas are unsatisfiable, meaningless or beyond the
	// generator's bounds: the answer is JSON, but not validated.
	invalid := map[string]bool{"false schema": true, "not JSON": true, "unknown type is any": true,
		"array huge minItems": true, "ref nowhere": true, "ref to itself": true, "ref loop": true,
		"huge minLength is capped": true}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := jsonInstance([]byte(tc.schema), "mock")
			if tc.want != "" && string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if invalid[tc.name] {
				if !json.Valid(got) {
					t.Fatalf("not JSON: %s", got)
				}
			} else {
				checkInstance(t, tc.schema, got)
			}
			if again := jsonInstance([]byte(tc.schema), "mock"); !bytes.Equal(again, got) {
				t.Errorf("not deterministic: %s then %s", got, again)
			}
		})
	}
}

// Recursive schemas end: past schemaMaxRefs expansions on a path the
// answer is minimal, and still valid.
func TestJSONInstanceRecursion(t *testing.T) {
	got := string(jsonInstance([]byte(treeSchema), "mock"))
	if d := strings.Count(got, `"value"`); d != schemaMaxRefs+1 {
		t.Errorf("%d nested nodes, want %d: %s", d, schemaMaxRefs+1, got)
	}
	if !strings.HasSuffix(got, `{"value":"","children":[]}`+strings.Repeat("]}", schemaMaxRefs)) {
		t.Errorf("the deepest node is not minimal: %s", got)
	}
	// A linked list ends with null where the schema allows it.
	list := `{"$defs":{"N":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/N"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/N"}`
	got = string(jsonInstance([]byte(list), "mock"))
	checkInstance(t, list, []byte(got))
	if !strings.Contains(got, `"next":null`) {
		t.Errorf("list does not end: %s", got)
	}
	// Mutual recursion through required, nullable members.
	mutual := `{"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}},"required":["b"]},"B":{"type":["object","null"],"properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"]}},"$ref":"#/$defs/A"}`
	got = string(jsonInstance([]byte(mutual), "mock"))
	checkInstance(t, mutual, []byte(got))
}

// Whatever the schema, the answer is bounded JSON, produced fast.
func TestJSONInstanceBounds(t *testing.T) {
	deep := func(n int, open, leaf, closing string) string {
		return strings.Repeat(open, n) + leaf + strings.Repeat(closing, n)
	}
	// A fan-out of 6 $refs per level, 12 levels deep: 6^12 paths.
	var defs []string
	for i := range 12 {
		var props []string
		for j := range 6 {
			props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/D%d"}`, j, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"D%d":{"type":"object","properties":{%s},"required":["p0","p1","p2","p3","p4","p5"]}`, i, strings.Join(props, ",")))
	}
	defs = append(defs, `"D12":{"type":"string","minLength":4000}`)
	fanOut := `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/D0"}`
	big := `{"enum":["` + strings.Repeat("x", 200_000) + `"]}`
	tests := []struct{ name, schema string }{
		{"deep objects", deep(5000, `{"type":"object","properties":{"a":`, `{"type":"string"}`, `},"required":["a"]}`)},
		{"deep arrays", deep(5000, `{"type":"array","minItems":3,"items":`, `{"type":"integer"}`, `}`)},
		{"deeper than encoding/json allows", deep(20000, `[`, `1`, `]`)},
		{"deep anyOf", deep(5000, `{"anyOf":[{"type":"null"},`, `{"type":"string"}`, `]}`)},
		{"deep allOf", deep(3000, `{"allOf":[`, `{"type":"string"}`, `]}`)},
		{"fan-out refs", fanOut},
		{"allOf loop", `{"$defs":{"A":{"allOf":[{"$ref":"#/$defs/A"},{"properties":{"x":{"type":"string"}}}]}},"$ref":"#/$defs/A"}`},
		{"big enum value", `{"type":"array","minItems":3,"items":` + big + `}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got := jsonInstance([]byte(tc.schema), "mock")
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %.200s", got)
			}
			if limit := schemaMaxBytes + 16*len(tc.schema) + 64<<10; len(got) > limit {
				t.Errorf("%d bytes, over %d", len(got), limit)
			}
		})
	}
}

func TestJSONFormatText(t *testing.T) {
	tests := []struct {
		f    jsonFormat
		word string
		want string
	}{
		{jsonFormat{free: true}, "primary", `{"mock":"primary"}`},
		{jsonFormat{free: true}, `a"b`, `{"mock":"a\"b"}`},
		{jsonFormat{}, "x", `{}`},
		{jsonFormat{schema: json.RawMessage(`{"type":"string"}`)}, "Zürich", `"Zürich"`},
		{jsonFormat{schema: json.RawMessage(`{"type":"STRING","enum":["red","green"]}`), enumText: true}, "x", `red`},
		{jsonFormat{schema: json.RawMessage(`{"type":"INTEGER"}`), enumText: true}, "x", `1`},
	}
	for _, tc := range tests {
		if got := tc.f.text(tc.word); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, got, tc.want)
		}
	}
	if schemaWord("") != "mock" || schemaWord("primary") != "primary" {
		t.Error("schemaWord")
	}
}

// FuzzJSONInstance: any schema, JSON or not, gives valid, bounded,
// deterministic JSON without panicking.
func FuzzJSONInstance(f *testing.F) {
	for _, s := range []string{``, `{}`, zodV4Schema, zodV3Schema, geminiSchema, treeSchema,
		`{"type":["number","null"],"minimum":3,"exclusiveMaximum":3.5}`,
		`{"allOf":[{"$ref":"#"},{"anyOf":[{"$ref":"#/allOf/0"}]}]}`,
		`{"type":"array","prefixItems":[{"const":1}],"items":{"enum":[null]},"minItems":"7"}`,
		`{"properties":{"a":{"$ref":"#/properties"}},"required":["a","a"]}`,
	} {
		f.Add([]byte(s), "mock")
	}
	f.Fuzz(func(t *testing.T, schema []byte, word string) {
		start := time.Now()
		got := jsonInstance(schema, word)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("took %v", d)
		}
		if !json.Valid(got) {
			t.Fatalf("not JSON: %q from %q", got, schema)
		}
		if limit := schemaMaxBytes + 16*len(schema) + 6*len(word) + 64<<10; len(got) > limit {
			t.Fatalf("%d bytes, over %d", len(got), limit)
		}
		if again := jsonInstance(schema, word); !bytes.Equal(got, again) {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
	})
}
