package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sameTree compares what decoding reads of two node trees: kinds, tags,
// values and lines.
func sameTree(t *testing.T, path string, a, b *yaml.Node) {
	t.Helper()
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || a.Value != b.Value || a.Line != b.Line || len(a.Content) != len(b.Content) {
		t.Fatalf("%s: yaml %v %s %q line %d (%d children); json %v %s %q line %d (%d children)", path,
			a.Kind, a.ShortTag(), a.Value, a.Line, len(a.Content), b.Kind, b.ShortTag(), b.Value, b.Line, len(b.Content))
	}
	for i := range a.Content {
		sameTree(t, fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i])
	}
}

// The JSON fast path reads a JSON config exactly as the YAML parser does:
// the same tree, the same lines, so the same Config and the same problems.
func TestJSONNodeMatchesYAML(t *testing.T) {
	docs := []string{
		`{"deployments": [{"id": "a", "provider": "openai", "base_url": "https://x.example", "model": "m", "price": {"input_per_mtok": 1.5, "output_per_mtok": 2}}], "pools": [{"id": "p", "model": "m", "deployments": ["a"]}], "routes": [{"model": "m", "pool": "p"}]}`,
		"{\n  \"server\": {\"listen\": \"127.0.0.1:9\", \"max_body_bytes\": 1024, \"cors\": {\"allow_credentials\": false}},\n  \"deployments\": [\n    {\n      \"id\": \"a\",\n      \"model\": null,\n      \"health\": {\"max_error_rate\": 0.5e0}\n    }\n  ],\n  \"colour\": \"red\"\n}\n",
		"{\"a\":[[],{},[1,2,{\"b\":\"c\\nd\"}]],\n\n\"e\":-3}",
	}
	for i, doc := range docs {
		var y yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &y); err != nil {
			t.Fatal(err)
		}
		j, ok := jsonNode([]byte(doc))
		if !ok {
			t.Fatalf("doc %d: not read as JSON", i)
		}
		sameTree(t, fmt.Sprint("doc", i), y.Content[0], j)
	}
	// And the problems of a JSON config name the lines they are on.
	_, ps := decode([]byte(docs[1]), "c.json", func(string) (string, bool) { return "", false })
	if len(ps) != 1 || ps[0].Line != 10 || !strings.Contains(ps[0].Msg, "unknown key") {
		t.Errorf("problems %v, want the unknown key on line 10", ps)
	}
}

// Not JSON after all (a comment, trailing text, a bare word): the YAML
// parser reads it, and reports its own errors.
func TestJSONNodeFallsBack(t *testing.T) {
	for _, doc := range []string{"{\"a\": 1} # c", "{\"a\": 1}\n{\"b\": 2}", "{a: 1}", "{\"a\": [1,}"} {
		if _, ok := jsonNode([]byte(doc)); ok {
			t.Errorf("%q read as JSON", doc)
		}
	}
}

// FuzzJSONNode: whatever JSON encoding/json accepts, the fast path reads
// as the YAML parser does.
func FuzzJSONNode(f *testing.F) {
	f.Add(`{"a": [1, 2.5, "x", true, null, {"b": {}}]}`)
	f.Add("{\n\"k\":\n\n[\"v\"]}")
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) || !looksJSON([]byte(doc)) {
			return
		}
		j, ok := jsonNode([]byte(doc))
		if !ok {
			t.Fatalf("valid JSON not read: %q", doc)
		}
		var y yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &y); err != nil || len(y.Content) == 0 {
			return // YAML refuses some JSON (e.g. duplicate keys, tabs); the fast path is stricter nowhere it matters
		}
		if strings.ContainsRune(doc, '\r') {
			return // YAML breaks lines at a lone CR too; only lines would differ
		}
		sameTree(t, "doc", y.Content[0], j)
	})
}
