package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"
)

func fileVersion(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// A refused file is recorded with its version and why, counted once
// however often the watcher polls, and forgotten when a good file is
// applied; the active version is the served file's.
func TestHolderStatus(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v1"))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return at }
	v1 := fileVersion(t, path)

	st := h.Status()
	if st.Version != v1 || st.LastRefused != nil || st.Applied != 0 || st.Refused != 0 || st.LoadedAt.IsZero() {
		t.Fatalf("initial status %+v, want version %s and nothing refused", st, v1)
	}
	w := h.newWatcher(path, nil)
	if st := h.Status(); st.Path != path {
		t.Errorf("Watch did not note the path: %+v", st)
	}

	// Refused: the active config stays, the refusal says why.
	bad := strings.Replace(withRoute("v2"), "pool: p\n", "pool: nosuch\n", 1)
	writeFile(t, path, bad)
	at = at.Add(time.Minute)
	if w.poll() {
		t.Fatal("a bad file was applied")
	}
	w.poll()
	st = h.Status()
	r := st.LastRefused
	if r == nil || st.Version != v1 || st.Refused != 1 || st.Applied != 0 {
		t.Fatalf("after a refusal: %+v", st)
	}
	if r.Version != fileVersion(t, path) || !r.At.Equal(at) || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], `unknown pool "nosuch"`) {
		t.Errorf("refusal %+v", r)
	}

	// Applied: the refusal is gone, the version and time are the new file's.
	writeFile(t, path, withRoute("v3"))
	at = at.Add(time.Minute)
	if !w.poll() {
		t.Fatal("a good file was not applied")
	}
	st = h.Status()
	if st.Version != fileVersion(t, path) || st.Version == v1 || !st.LoadedAt.Equal(at) || st.LastRefused != nil || st.Applied != 1 || st.Refused != 1 || st.Path != path {
		t.Errorf("after applying: %+v", st)
	}
}

// A file that cannot be read is not a refused config: an editor's rename
// makes it vanish for a moment.
func TestHolderStatusIgnoresUnreadable(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v1"))
	_ = h.Reload(path + ".missing")
	if st := h.Status(); st.Refused != 0 || st.LastRefused != nil {
		t.Errorf("status %+v", st)
	}
}

func TestHolderStatusBuiltInCode(t *testing.T) {
	c, err := Parse([]byte(minimal), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(c, "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if st := NewHolder(s).Status(); st.Version != "" || st.Path != "" {
		t.Errorf("status of a config built in code: %+v", st)
	}
}
