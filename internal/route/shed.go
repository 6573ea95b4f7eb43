package route

import "github.com/spillway-gw/spillway/internal/catalog"

// Rates reads what the gateway sent each deployment in the last minute:
// requests, and tokens (prompt estimate plus max_tokens, counted at
// dispatch). It must be read-only.
type Rates interface {
	Rate(id string) (requests, tokens int)
}

// Shedding says why a request was shed: the rung it would go to, what
// that rung was sent in the last minute, its quota and the share of it
// past which the request's priority is refused.
type Shedding struct {
	Deployment       *catalog.Deployment
	Requests, Tokens int
	// Need is what the shed request would have counted against the TPM.
	Need            int
	Quota           catalog.Quota
	At              float64
	Priority, Below catalog.Priority
}

// requestTokens is what one request counts against a rung's TPM.
func requestTokens(in *Input) int { return in.InputTokens + in.Req.MaxTokens }

// pastShare reports whether sending the request to d would take d's rate
// in the last minute past share at of its quota.
func pastShare(d *catalog.Deployment, in *Input, at float64) bool {
	q := d.Quota
	if !q.Declared() || in.Rates == nil {
		return false
	}
	reqs, toks := in.Rates.Rate(d.ID)
	return !Fits(q, at, reqs, toks, requestTokens(in))
}

// Fits reports whether one more request of need tokens keeps a rung that
// was sent reqs requests and toks tokens in the last minute within share
// at of its quota q.
func Fits(q catalog.Quota, at float64, reqs, toks, need int) bool {
	return (q.RPM <= 0 || float64(reqs+1) <= at*float64(q.RPM)) &&
		(q.TPM <= 0 || float64(toks+need) <= at*float64(q.TPM))
}

// shed refuses a request below the route's protected priority when the
// rung it would go to (first in Order, after failover and exercise) is past
// the route's share of its quota: the protected classes keep the rung.
func (p *Plan) shed(in *Input) {
	rr := p.Route
	if !rr.Shed.On() || in.Rates == nil || p.Verdict != Planned || len(p.Order) == 0 {
		return
	}
	pr := in.Priority
	if pr == 0 {
		pr = catalog.PriorityNormal
	}
	if pr >= rr.ShedBelow {
		return
	}
	d := p.Order[0]
	if !pastShare(d, in, rr.Shed.At) {
		return
	}
	reqs, toks := in.Rates.Rate(d.ID)
	p.Verdict, p.Order, p.Exercise = Shed, p.Order[:0], nil
	p.Shedding = Shedding{Deployment: d, Requests: reqs, Tokens: toks, Need: requestTokens(in), Quota: d.Quota, At: rr.Shed.At, Priority: pr, Below: rr.ShedBelow}
}
