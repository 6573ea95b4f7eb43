package catalog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics (decode recovers from panics, so a
// recovered one shows up as a "cannot parse YAML" problem, which fails
// here), refuses with Problems, and what it accepts builds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "~", "a: [", minimal, base, withRoute("x"),
		"server: {<<: {listen: a}}", "a: &a [*a]", "deployments: &d [{id: a}]\npools: [{deployments: *d}]",
		"server:\n  idle_timeout: -1s\n", "deployments:\n  - price: {input_per_mtok: .nan}\n"} {
		f.Add([]byte(s))
	}
	if paths, _ := filepath.Glob("../../examples/*.yaml"); len(paths) > 0 {
		for _, p := range append(paths, "testdata/snapshot.yaml") {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "f.yaml")
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error is not a non-empty Problems: %#v", err)
			}
			// YAML breaks lines at \n, \r and \r\n alike.
			maxLine := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) + 2
			for _, p := range ps {
				if strings.HasPrefix(p.Msg, "cannot parse YAML") {
					t.Fatalf("panic recovered: %v", p)
				}
				if p.Line < 0 || p.Line > maxLine {
					t.Fatalf("line out of range: %v", p)
				}
			}
			return
		}
		if _, err := Build(c, "f.yaml"); err != nil {
			t.Fatalf("Parse accepted what Build refuses: %v", err)
		}
		_ = c.Warnings("f.yaml")
	})
}
