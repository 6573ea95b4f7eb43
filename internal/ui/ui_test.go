package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandler(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		path, contentType string
		code              int
	}{
		{"/ui/nope.js", "", 404},
		{"/ui/assets/app.js", "", 404},
		{"/ui/index.html/", "", 404},
		{"/ui/..%2fui.go", "", 404},
		{"/ui", "text/html; charset=utf-8", 200},
		{"/ui/", "text/html; charset=utf-8", 200},
		{"/ui/index.html", "text/html; charset=utf-8", 200},
		{"/ui/app.js", "text/javascript; charset=utf-8", 200},
		{"/ui/style.css", "text/css; charset=utf-8", 200},
	} {
		w := get(t, h, tc.path)
		if w.Code != tc.code {
			t.Errorf("%s: %d, want %d", tc.path, w.Code, tc.code)
			continue
		}
		if tc.code != 200 {
			continue
		}
		hd := w.Header()
		if got := hd.Get("Content-Type"); got != tc.contentType {
			t.Errorf("%s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-cache",
		} {
			if got := hd.Get(k); got != want {
				t.Errorf("%s: %s %q, want %q", tc.path, k, got, want)
			}
		}
		etag := hd.Get("ETag")
		if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
			t.Errorf("%s: ETag %q", tc.path, etag)
		}
		// Revalidation: the same ETag is a 304 with no body; another is
		// the asset again.
		if w2 := get(t, h, tc.path, "If-None-Match", etag); w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
			t.Errorf("%s with its ETag: %d (%d bytes), want 304", tc.path, w2.Code, w2.Body.Len())
		}
		if w2 := get(t, h, tc.path, "If-None-Match", `"0000000000000000"`); w2.Code != 200 || w2.Body.Len() == 0 {
			t.Errorf("%s with another ETag: %d", tc.path, w2.Code)
		}
	}
}

// The page works under its own Content-Security-Policy and fetches nothing
// from anywhere else: no inline script, style or event handler, no URL
// off the gateway, and the script puts nothing the gateway returns into
// the page as HTML. The admin key lives in sessionStorage only, never in
// a cookie or localStorage.
func TestAssetsSelfContained(t *testing.T) {
	read := func(name string) string {
		b, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	html := read("index.html")
	for _, m := range regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[1], `src="/ui/`) || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline or foreign script: %s", m[0])
		}
	}
	for _, re := range []string{`(?i)<style\b`, `(?i)\sstyle=`, `(?i)\son[a-z]+=`, `(?i)javascript:`, `(?i)(https?:)?//[a-z0-9]`} {
		if m := regexp.MustCompile(re).FindString(html); m != "" {
			t.Errorf("index.html has %q (%s)", m, re)
		}
	}
	if !strings.Contains(html, `<link rel="stylesheet" href="/ui/style.css">`) {
		t.Error("index.html does not load /ui/style.css")
	}
	if m := regexp.MustCompile(`(?i)url\(|@import|https?://`).FindString(read("style.css")); m != "" {
		t.Errorf("style.css fetches something: %q", m)
	}
	js := read("app.js")
	// The one absolute URL the script may hold is SVG's namespace, which
	// is a name, not a fetch.
	js = strings.ReplaceAll(js, "'http://www.w3.org/2000/svg'", "")
	for _, bad := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
		"eval(", "new Function", "document.cookie", "localStorage", "setAttribute('style'"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %q", bad)
		}
	}
	if !strings.Contains(js, "sessionStorage") || !strings.Contains(js, "'Bearer '") {
		t.Error("app.js no longer sends the key from sessionStorage as a bearer token: update this test and the README")
	}
}
