// Package ui serves the gateway's dashboard: one page, its script and its
// style sheet, embedded in the binary, so nothing is fetched from anywhere
// but the gateway itself.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the dashboard is served: Prefix itself is the page.
const Prefix = "/ui"

// securityHeaders: the page runs only its own script and style, talks only
// to the gateway that served it, and cannot be framed. The admin key lives
// in sessionStorage, so nothing of it may leak in a referrer either.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "no-referrer"},
	{"Cache-Control", "no-cache"},
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves GET Prefix (the page) and Prefix/<file> (its assets).
// The page holds no data: every panel fetches the admin API with the
// admin key the operator signs in with.
func Handler() http.Handler {
	files := map[string]*asset{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		files[strings.TrimPrefix(p, "assets/")] = &asset{body: b, contentType: contentTypes[path.Ext(p)],
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("ui: reading the embedded assets: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, Prefix), "/")
		if name == "" {
			name = "index.html"
		}
		a := files[name]
		if a == nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		for _, kv := range securityHeaders {
			h.Set(kv[0], kv[1])
		}
		h.Set("ETag", a.etag)
		if r.Header.Get("If-None-Match") == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", a.contentType)
		_, _ = w.Write(a.body)
	})
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}
