package catalog

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadOption tunes how Load, Parse and Check read a file.
type LoadOption func(*loadConfig)

type loadConfig struct {
	lookupEnv func(string) (string, bool)
}

// WithLookupEnv resolves ${VAR} references through lookup instead of
// os.LookupEnv (the default; nil also means it), so that a test or a
// command chooses the environment the file is read in.
func WithLookupEnv(lookup func(string) (string, bool)) LoadOption {
	return func(lc *loadConfig) { lc.lookupEnv = lookup }
}

func newLoadConfig(opts []LoadOption) loadConfig {
	var lc loadConfig
	for _, o := range opts {
		o(&lc)
	}
	if lc.lookupEnv == nil {
		lc.lookupEnv = os.LookupEnv
	}
	return lc
}

// interpolate expands environment references in every scalar value under
// n, in place, before decoding, so that a typed field (a duration, a
// number, a URL) reads the expanded text as if it had been written there.
// Keys are never expanded. The forms are:
//
//	${VAR}          the variable's value; unset is a problem
//	${VAR:-default} the value, or default when VAR is unset or empty
//	$$              a literal $
//
// A bare $VAR is refused (it would otherwise stay literal, silently).
// A value is typed after expansion, quoted or not (${PORT} and "${PORT}"
// can fill a number; "${PORT}" is how a flow mapping must write it);
// only an explicit tag (!!str) keeps it a string. An expansion to nothing
// leaves the field at its default. A value that cannot be expanded becomes null,
// so that its field reports the one problem, not a second about its type.
// Aliases are not followed: the anchored value is expanded where it is
// written, once.
func interpolate(n *yaml.Node, path, file string, lookup func(string) (string, bool)) Problems {
	in := interpolator{file: file, lookup: lookup}
	in.walk(n, path)
	return in.probs
}

type interpolator struct {
	file   string
	lookup func(string) (string, bool)
	probs  Problems
}

func (in *interpolator) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			in.walk(c, path)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			in.walk(c, path+"["+strconv.Itoa(i)+"]")
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			fp := path
			if k.Kind == yaml.ScalarNode {
				fp = k.Value
				if path != "" {
					fp = path + "." + k.Value
				}
			}
			in.walk(n.Content[i+1], fp)
		}
	case yaml.ScalarNode:
		in.scalar(n, path)
	}
}

func (in *interpolator) scalar(n *yaml.Node, path string) {
	if !strings.Contains(n.Value, "$") {
		return
	}
	out, errs := expand(n.Value, in.lookup)
	var msgs []string
	for _, e := range errs {
		if e.unset == "" {
			msgs = append(msgs, e.msg)
			continue
		}
		// Suggest the field's own default when the value is the
		// reference alone: ${SPILLWAY_DB:-spillway.db}.
		def := "..."
		if d := fieldDefault(path); d != "" && n.Value == "${"+e.unset+"}" {
			def = d
		}
		msgs = append(msgs, fmt.Sprintf("${%s} is not set (set it, or write ${%s:-%s})", e.unset, e.unset, def))
	}
	if len(msgs) == 0 && isEnvName(path) && out != "" && !envVarRE.MatchString(out) {
		// The field names a variable; expanding a secret into it is the
		// mistake it exists to prevent. The expansion is not repeated
		// here: it may be that secret.
		msgs = append(msgs, fmt.Sprintf("%s expands to something that is not an environment variable name: "+
			"this field names the variable that holds the secret (e.g. OPENAI_API_KEY), never the secret itself", n.Value))
	}
	for _, m := range msgs {
		in.probs = append(in.probs, Problem{File: in.file, Line: n.Line, Field: path, Msg: m})
	}
	if len(msgs) > 0 {
		n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!null", "", 0
		return
	}
	n.Value = out
	if n.Style&yaml.TaggedStyle == 0 {
		// Type it as if the expanded text had been written plain, so
		// that ${MAX_BODY} can fill a number. Quoted alike: quotes are
		// how YAML lets ${...} into a flow mapping, {a: "${X}"}.
		n.Style = 0
		n.Tag = ""
		n.Tag = n.ShortTag()
	}
}

// isEnvName reports whether the field at path holds the name of an
// environment variable (credential_env, aws.access_key_env, ...).
func isEnvName(path string) bool {
	return strings.HasSuffix(path, "_env")
}

// expandErr is one reference expand could not resolve: an unset variable
// (unset names it) or a form spillway does not read (msg says which).
type expandErr struct {
	unset string
	msg   string
}

// expand replaces the references in s (see interpolate) and returns the
// result and every reference it could not resolve.
func expand(s string, lookup func(string) (string, bool)) (string, []expandErr) {
	var b strings.Builder
	var errs []expandErr
	bad := func(format string, args ...any) { errs = append(errs, expandErr{msg: fmt.Sprintf(format, args...)}) }
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		var next byte
		if i+1 < len(s) {
			next = s[i+1]
		}
		switch {
		case next == '$':
			b.WriteByte('$')
			i += 2
			continue
		case isNameStart(next):
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			bad("%s is not expanded: write ${%s} (or $$ for a literal $)", s[i:j], s[i+1:j])
			i = j
			continue
		case next != '{':
			b.WriteByte('$') // "$5", a trailing "$": nothing to expand
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			bad("%s has a ${ without its closing } (write $$ for a literal $)", strconv.Quote(s[i:]))
			return s, errs
		}
		ref, inner := s[i:i+3+end], s[i+2:i+2+end]
		i += 3 + end
		name, def, hasDef := strings.Cut(inner, ":-")
		switch {
		case name == "":
			bad("%s names no variable", ref)
			continue
		case !envVarRE.MatchString(name):
			if j := strings.IndexAny(name, "-:?+="); j > 0 && envVarRE.MatchString(name[:j]) {
				bad("%s: only ${VAR} and ${VAR:-default} are read", ref)
			} else {
				bad("%s: %q is not a variable name (letters, digits and _, not starting with a digit)", ref, name)
			}
			continue
		case strings.Contains(def, "${"):
			bad("%s}: a default cannot hold another ${...}", ref)
			continue
		}
		v, ok := lookup(name)
		switch {
		case hasDef && (!ok || v == ""):
			v = def
		case !ok:
			errs = append(errs, expandErr{unset: name})
			continue
		}
		b.WriteString(v)
	}
	return b.String(), errs
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || '0' <= c && c <= '9' }

// fieldDefault formats the default ApplyDefaults gives the field at path
// ("ledger.path" → "spillway.db"), or "" when it has none.
func fieldDefault(path string) string {
	c := &Config{Deployments: []Deployment{{AWS: &AWSCredentialEnv{}}}, Pools: []Pool{{}}}
	c.ApplyDefaults()
	v := reflect.ValueOf(c).Elem()
	for _, seg := range strings.Split(path, ".") {
		name, _, indexed := strings.Cut(seg, "[")
		v = yamlField(v, name)
		if !v.IsValid() {
			return ""
		}
		if indexed {
			if v.Kind() != reflect.Slice || v.Len() == 0 {
				return ""
			}
			v = v.Index(0)
		}
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return ""
			}
			v = v.Elem()
		}
	}
	if d, ok := v.Interface().(Duration); ok {
		if d == 0 {
			return ""
		}
		s := d.String() // 2m0s → 2m, 24h0m0s → 24h
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		if v.Int() != 0 {
			return strconv.FormatInt(v.Int(), 10)
		}
	}
	return ""
}

// yamlField returns the field of struct v whose yaml name is name.
func yamlField(v reflect.Value, name string) reflect.Value {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	t := v.Type()
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); n == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}
