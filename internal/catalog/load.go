package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads, strictly decodes, defaults and validates the config file at
// path. On failure the error is a Problems listing everything wrong.
// ${VAR} references in values are expanded first (see WithLookupEnv).
func Load(path string, opts ...LoadOption) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path, opts...)
}

// Parse is Load for a file already in memory; filename is used in
// problems and to resolve the relative paths the file names (server.tls).
// Unknown keys, wrong types, unset variables and an empty document are
// errors; then defaults are applied and the result validated. On failure
// the Config is nil and the error is a Problems listing everything wrong.
func Parse(data []byte, filename string, opts ...LoadOption) (*Config, error) {
	c, errs, _ := check(data, filename, false, newLoadConfig(opts))
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// Check does what Parse does but keeps going as far as it can, for
// `spillway check`: it returns the config whenever the file is YAML at all
// (defaulted, possibly invalid), every error (every unset ${VAR} among
// them), and every warning from Warnings. Credential variables are not
// consulted; see MissingCredentials.
func Check(data []byte, filename string, opts ...LoadOption) (c *Config, errs, warns Problems) {
	return check(data, filename, true, newLoadConfig(opts))
}

func check(data []byte, filename string, withWarnings bool, lc loadConfig) (*Config, Problems, Problems) {
	c, errs := decode(data, filename, lc.lookupEnv)
	if c == nil {
		return nil, errs, nil
	}
	c.resolvePaths(filename)
	c.ApplyDefaults()
	// A value that failed to decode was left zero; validating it again
	// would only repeat the same complaint as "required".
	for _, p := range c.Validate(filename) {
		if !coveredBy(p.Field, errs) {
			errs = append(errs, p)
		}
	}
	errs.sortByLine()
	var warns Problems
	if withWarnings {
		warns = c.Warnings(filename)
	}
	return c, errs, warns
}

// resolvePaths makes the relative file paths the config names relative to
// the directory of the config file instead of the working directory, so
// that a gateway started from anywhere reads the same files.
func (c *Config) resolvePaths(filename string) {
	if filename == "" {
		return
	}
	dir := filepath.Dir(filename)
	for _, p := range []*string{&c.Server.TLS.CertFile, &c.Server.TLS.KeyFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

func coveredBy(field string, ps Problems) bool {
	for _, p := range ps {
		if p.Field != "" && (field == p.Field || strings.HasPrefix(field, p.Field+".") || strings.HasPrefix(field, p.Field+"[")) {
			return true
		}
	}
	return false
}

func readError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// maxNodeVisits bounds decoding work: aliases let a small file name the
// same subtree many times.
const maxNodeVisits = 1 << 20

// decode strictly decodes one YAML document into a Config without defaults
// or validation. The Config is nil when the data is not a usable document
// (syntax error, empty, not a mapping); otherwise it holds every value that
// decoded, and the Problems list the ones that did not.
func decode(data []byte, file string, lookupEnv func(string) (string, bool)) (c *Config, ps Problems) {
	// The YAML library has panicked on hostile input in past releases; a
	// config reload must never take the gateway down with it.
	defer func() {
		if r := recover(); r != nil {
			c, ps = nil, Problems{{File: file, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	var doc yaml.Node
	if looksJSON(data) {
		if n, ok := jsonNode(data); ok {
			doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}, Line: 1}
			return decodeRoot(&doc, file, lookupEnv)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Problems{{File: file, Msg: "file is empty"}}
		}
		p := syntaxProblem(file, err)
		if bytes.Contains(data, []byte("${")) && strings.Contains(p.Msg, "did not find expected ','") {
			// Braces end a flow mapping: YAML reads {a: ${X}} as broken.
			p.Msg += ` (inside {...} or [...], quote a reference: "${VAR}")`
		}
		return nil, Problems{p}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, Problems{syntaxProblem(file, err)}
	default:
		return nil, Problems{{File: file, Line: extra.Line, Msg: "a second YAML document (after ---): spillway reads exactly one"}}
	}
	return decodeRoot(&doc, file, lookupEnv)
}

// decodeRoot decodes a parsed document (from the YAML parser or the JSON
// fast path) into a Config.
func decodeRoot(root *yaml.Node, file string, lookupEnv func(string) (string, bool)) (*Config, Problems) {
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, Problems{{File: file, Msg: "file is empty"}}
		}
		root = root.Content[0]
	}
	if isNull(root) {
		return nil, Problems{{File: file, Line: root.Line, Msg: "file is empty"}}
	}
	if root.Kind != yaml.MappingNode {
		return nil, Problems{{File: file, Line: root.Line, Msg: "expected a mapping of server, deployments, pools and routes, got " + describe(root)}}
	}
	d := &decoder{file: file, lines: map[string]int{}}
	d.probs = interpolate(root, "", file, lookupEnv)
	c := &Config{}
	d.value(root, reflect.ValueOf(c).Elem(), "")
	c.lines = d.lines
	return c, d.probs
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxProblem(file string, err error) Problem {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{File: file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return Problem{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// decoder walks a yaml.Node tree into Go values by their yaml tags. It does
// the job of yaml's own strict decoding, but names each problem by field
// path, reports all of them, and records the line of every key so that
// validation can point at the offending line.
type decoder struct {
	file   string
	lines  map[string]int
	probs  Problems
	visits int
	// structs caches each struct type's yaml fields: a big config visits
	// the same few types thousands of times.
	structs      map[reflect.Type]*structInfo
	unmarshalers map[reflect.Type]bool
}

// structInfo is a struct type's yaml fields: name to field index, the
// names in declaration order (for suggestions), and the Line field.
type structInfo struct {
	fields map[string]int
	known  []string
	line   int // index of the `yaml:"-"` Line int field; -1 if none
}

func (d *decoder) info(t reflect.Type) *structInfo {
	if si := d.structs[t]; si != nil {
		return si
	}
	si := &structInfo{fields: map[string]int{}, line: -1}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "Line" && f.Type.Kind() == reflect.Int && f.Tag.Get("yaml") == "-" {
			si.line = i
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		si.fields[name] = i
		si.known = append(si.known, name)
	}
	if d.structs == nil {
		d.structs = map[reflect.Type]*structInfo{}
	}
	d.structs[t] = si
	return si
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.probs = append(d.probs, Problem{File: d.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if d.visits++; d.visits > maxNodeVisits {
		if d.visits == maxNodeVisits+1 {
			d.fail(n, path, "document expands to too many values (aliases?)")
		}
		return
	}
	if isNull(n) {
		return // absent and null both mean "use the default"
	}
	if d.unmarshaler(v.Type()) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.fail(n, path, "%s", err.Error())
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.value(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.structValue(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			ip := path + "[" + strconv.Itoa(i) + "]"
			d.lines[ip] = item.Line
			d.value(item, s.Index(i), ip)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int64:
		var x int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || !scalarInt(n, &x) || v.OverflowInt(x) {
			d.fail(n, path, "expected a whole number, got %s", describe(n))
			return
		}
		v.SetInt(x)
	case reflect.Bool:
		var x bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&x) != nil {
			d.fail(n, path, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(x)
	case reflect.Float64:
		var x float64
		if tag := n.ShortTag(); n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || !scalarFloat(n, &x) {
			d.fail(n, path, "expected a number, got %s", describe(n))
			return
		}
		v.SetFloat(x)
	default:
		panic(fmt.Sprintf("catalog: no decoding for %s at %s", v.Type(), path)) // programming error
	}
}

func (d *decoder) structValue(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	si := d.info(v.Type())
	fields, known := si.fields, si.known
	// A struct's mapping has a handful of keys: duplicates are found by a
	// scan, or by a map past a few dozen (a hostile file stays linear).
	var seen map[string]int
	if len(n.Content) > 64 {
		seen = make(map[string]int, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "expected a key name, got %s", describe(k))
			continue
		}
		fp := k.Value
		if path != "" {
			fp = path + "." + k.Value
		}
		if k.Value == "<<" {
			d.fail(k, path, "merge keys (<<) are not supported; use an alias (*name) for a whole value instead")
			continue
		}
		if seen != nil {
			if first, dup := seen[k.Value]; dup {
				d.fail(k, fp, "duplicate key (first at line %d)", first)
				continue
			}
			seen[k.Value] = k.Line
		} else if first := firstKey(n.Content[:i], k.Value); first != nil {
			d.fail(k, fp, "duplicate key (first at line %d)", first.Line)
			continue
		}
		fi, ok := fields[k.Value]
		if !ok {
			d.fail(k, fp, "unknown key%s", suggest(k.Value, known))
			continue
		}
		d.lines[fp] = k.Line
		d.value(val, v.Field(fi), fp)
	}
	// Deployment, Pool and Route remember where they were written.
	if si.line >= 0 {
		v.Field(si.line).SetInt(int64(n.Line))
	}
}

// unmarshaler reports whether values of t decode themselves (Duration);
// cached, since reflection's Implements is costly per value.
func (d *decoder) unmarshaler(t reflect.Type) bool {
	if u, ok := d.unmarshalers[t]; ok {
		return u
	}
	u := reflect.PointerTo(t).Implements(unmarshalerType)
	if d.unmarshalers == nil {
		d.unmarshalers = map[reflect.Type]bool{}
	}
	d.unmarshalers[t] = u
	return u
}

// scalarInt reads an !!int scalar: plain decimal directly, anything else
// (hex, octal) through the YAML library.
func scalarInt(n *yaml.Node, x *int64) bool {
	if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
		*x = v
		return true
	}
	return n.Decode(x) == nil
}

// scalarFloat reads an !!int or !!float scalar, as scalarInt does.
func scalarFloat(n *yaml.Node, x *float64) bool {
	if v, err := strconv.ParseFloat(n.Value, 64); err == nil && !strings.ContainsAny(n.Value, "xXpP_") {
		*x = v
		return true
	}
	return n.Decode(x) == nil
}

// firstKey finds an earlier key named name among a mapping's preceding
// key/value nodes: mappings have a handful of keys, so a scan beats a map.
func firstKey(kvs []*yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(kvs); i += 2 {
		k := kvs[i]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind == yaml.ScalarNode && k.Value == name {
			return k
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return strconv.Quote(v)
}

// suggest proposes the known key closest to an unknown one, or lists them.
func suggest(key string, known []string) string {
	best, bestDist := "", 3 // more than two edits away is not a typo
	for _, k := range known {
		if dist := editDistance(strings.ToLower(key), k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return fmt.Sprintf(": did you mean %q?", best)
	}
	sorted := slices.Sorted(slices.Values(known))
	return " (known: " + strings.Join(sorted, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // not a typo of any key
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
