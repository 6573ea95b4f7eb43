package server

import "net/http"

// hdrAnthropicRequestID is the request id again, where Anthropic's SDKs
// read it.
const hdrAnthropicRequestID = "Request-Id"

// headerValues sets single-valued response headers out of one backing
// array: one allocation for a group of headers where Header.Set makes one
// []string per value (BenchmarkStream20: 8 values set at a stream's
// commit, 2 at the request's start). Keys must be in canonical form
// (TestHeaderKeysCanonical); Set would canonicalize them, a map store
// does not.
type headerValues struct {
	h    http.Header
	vals []string
}

// newHeaderValues sets into h with room for n values; more still work
// (append grows the array; the values already set keep the old one).
func newHeaderValues(h http.Header, n int) headerValues {
	return headerValues{h: h, vals: make([]string, 0, n)}
}

// set replaces key's values with v, as Header.Set. Each value's slice is
// capped at its length, so a later Header.Add on that key copies instead
// of writing into the next header's value.
func (hv *headerValues) set(key, v string) {
	i := len(hv.vals)
	hv.vals = append(hv.vals, v)
	hv.h[key] = hv.vals[i : i+1 : i+1]
}
