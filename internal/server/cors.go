package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// corsAllowHeaders are the request headers a page may send: what the
// OpenAI and Anthropic SDKs set in a browser (their keys, versions, betas,
// the Anthropic SDK's browser opt-in, the retry idempotency key, a W3C
// traceparent) besides the x-stainless-* family, allowed by prefix.
var corsAllowHeaders = []string{
	"accept", "anthropic-beta", "anthropic-dangerous-direct-browser-access", "anthropic-version",
	"authorization", "content-type", "idempotency-key", "openai-beta", "openai-organization",
	"openai-project", "traceparent", "user-agent", "x-api-key",
}

const corsStainlessPrefix = "x-stainless-"

// corsExposeHeaders are the response headers a page may read: the ones
// that say what the gateway did and what it cost, and when to retry.
var corsExposeHeaders = strings.Join([]string{
	hdrRequestID, "Request-Id", hdrModel, hdrDeployment, hdrAttempts, hdrTrail,
	hdrCostUSD, hdrCostStatus, hdrTokenCount, "Retry-After", idempotency.HeaderReplayed, tracing.HeaderTraceID,
}, ", ")

const corsAllowMethods = "GET, POST, PUT, DELETE"

// cors applies the current snapshot's server.cors, so that a reload
// applies at once. A request from an allowed origin gets
// Access-Control-Allow-Origin (and the exposed headers); a preflight
// from one is answered here, 204, and cors reports true. A request
// without an Origin, from an origin not listed, or with CORS off gets no
// CORS header and goes on as if CORS did not exist: the browser then
// withholds the answer from the page.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	c := &s.opts.Catalog.Load().Config().Server.CORS
	if len(c.AllowedOrigins) == 0 {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin") // the answer depends on it, for caches
	allow, ok := corsAllowOrigin(c, origin)
	if !ok {
		return false
	}
	h.Set("Access-Control-Allow-Origin", allow)
	if c.AllowCredentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsRequestHeaders(r.Header.Values("Access-Control-Request-Headers")))
	maxAge := c.MaxAge.D()
	if maxAge == 0 {
		maxAge = catalog.DefaultCORSMaxAge
	}
	h.Set("Access-Control-Max-Age", strconv.FormatInt(int64(maxAge.Seconds()), 10))
	w.WriteHeader(http.StatusNoContent)
	return true
}

// corsAllowOrigin returns the Access-Control-Allow-Origin value for
// origin: "*" when any origin is allowed (validation keeps that apart from
// credentials), else origin itself when it is listed (case aside).
func corsAllowOrigin(c *catalog.CORS, origin string) (string, bool) {
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			return "*", true
		}
		if strings.EqualFold(o, origin) {
			return origin, true
		}
	}
	return "", false
}

// corsRequestHeaders lists the headers a preflight may allow: the fixed
// set plus each x-stainless-* header the preflight asks for. A header
// asked for and not allowed is left out, so the browser refuses it.
func corsRequestHeaders(asked []string) string {
	const most = 32 // the SDKs send fewer than ten; a flood is not echoed
	out := strings.Join(corsAllowHeaders, ", ")
	n := 0
	for _, line := range asked {
		for name := range strings.SplitSeq(line, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if strings.HasPrefix(name, corsStainlessPrefix) && len(name) > len(corsStainlessPrefix) && validHeaderName(name) {
				if n++; n > most {
					return out
				}
				out += ", " + name
			}
		}
	}
	return out
}

// validHeaderName reports whether name is a header token, so that nothing
// a preflight sends is echoed into a header unchecked.
func validHeaderName(name string) bool {
	for i := range len(name) {
		c := name[i]
		if !(c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return name != ""
}
