package catalog

import (
	"path/filepath"
	"testing"
)

// Every shipped example config loads with no error and no warning: they
// are what a new user copies.
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no examples found")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if ws := c.Warnings(path); len(ws) > 0 {
				t.Errorf("warnings:\n%v", ws)
			}
			if _, err := Build(c, path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMockExample(t *testing.T) {
	c, err := Load("../../examples/mock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(c, "mock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.Route("claude-sonnet-4-5")
	if !ok || len(r.Deployments) != 2 {
		t.Fatalf("claude-sonnet-4-5: %+v", r)
	}
	for i, want := range []struct{ id, kind, url string }{
		{"mock-primary", KindOpenAI, "http://127.0.0.1:9101"},
		{"mock-secondary", KindAnthropic, "http://127.0.0.1:9102"},
	} {
		d := r.Deployments[i]
		if d.ID != want.id || d.Provider != want.kind || d.BaseURL != want.url || !d.Priced() || d.CredentialEnv != "" {
			t.Errorf("rung %d: %+v", i, d)
		}
	}
	if r, ok := s.Route("gpt-4.1"); !ok || len(r.Deployments) != 1 || r.Deployments[0].Provider != KindOpenAI || r.Deployments[0].BaseURL != "http://127.0.0.1:9103" {
		t.Errorf("gpt-4.1: %+v", r)
	}
}
