package redisstate

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/redisstate/redistest"
)

func redisURL(t testing.TB) string { t.Helper(); return redistest.URL(t) }

func newProxy(t testing.TB, url string) (*redistest.Proxy, string) {
	t.Helper()
	return redistest.NewProxy(t, url)
}

// testPrefix isolates one test's keys and channels.
func testPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// open is a client on url under prefix, closed at the test's end. Bounds
// are generous for a loaded CI machine; tests of the bounds set their own.
func open(t testing.TB, url, prefix string, edit func(*Options)) *Client {
	t.Helper()
	o := Options{URL: url, Prefix: prefix, Timeout: 500 * time.Millisecond, RetryEvery: 50 * time.Millisecond, ProbeLease: 5 * time.Second}
	if edit != nil {
		edit(&o)
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond every millisecond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}
