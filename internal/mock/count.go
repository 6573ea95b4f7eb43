package mock

import (
	"io"
	"net/http"
)

// countTokens serves Anthropic's POST /v1/messages/count_tokens: the same
// admission as a generation, then {"input_tokens": N} with N counted as a
// generation's prompt is (ceil(len(body)/4)), so a count and the usage of
// the same request agree to within the fields only a generation sends.
func (an anthropicMessages) countTokens(m *Mock, c *call, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		an.writeError(c, w, an.methodError(r))
		return
	}
	if e := an.admit(c, r, m.opts.APIKey); e != nil {
		an.writeError(c, w, e)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, m.maxBody+1))
	if err != nil {
		return
	}
	if int64(len(body)) > m.maxBody {
		an.writeError(c, w, newAPIError(http.StatusRequestEntityTooLarge, "request_too_large", "", "Request exceeds the maximum allowed number of bytes.", ""))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": (len(body) + 3) / 4})
}
