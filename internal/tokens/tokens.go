// Package tokens is the gateway's one token estimator: how many tokens a
// text of some size is taken to hold wherever no provider has counted them
// (reservations, rate limits, routing's context gate and cost ranking, the
// output delivered by a stream, what an answer without reported usage is
// billed at).
package tokens

// Estimate is the tokens of bytes bytes of text: a quarter of them,
// rounded up (English prose runs near four bytes a token, code and other
// scripts denser, JSON framing looser); 0 for none. Settlement bills a
// provider's reported usage wherever there is one.
func Estimate(bytes int) int {
	if bytes <= 0 {
		return 0
	}
	return bytes/4 + min(bytes%4, 1)
}
