package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/route"
	"github.com/spillway-gw/spillway/internal/tokens"
)

// hdrTokenCount says whether a count is a provider's own ("exact") or the
// gateway's estimate ("estimate").
const hdrTokenCount = "X-Spillway-Token-Count"

// countHandler serves a token-counting endpoint: the first rung of the
// request's plan whose provider counts tokens (Anthropic's count_tokens)
// answers; when none can, or all of them fail, the gateway's estimate
// (about four bytes a token) answers, marked as one. Counting is free:
// no budget, no reservation, no ledger row.
type countHandler struct {
	s *Server
	d interface {
		dialect.Dialect
		dialect.Counter
	}
}

func (h *countHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	c := &call{id: newRequestID(s.opts.Now()), start: s.opts.Now(), d: h.d}
	w.Header().Set(hdrRequestID, c.id)
	w.Header().Set("Request-Id", c.id)
	key, pub := s.authenticate(r)
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	body, pub := s.readBody(w, r)
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	req, pub := h.d.DecodeCount(body, r.Header)
	if pub == nil {
		pub = checkLimits(req, s.opts.Catalog.Load().Config().Server.Limits)
	}
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	if !keys.Allows(key, req.Model) {
		s.writeError(w, c, &failure.Public{Status: http.StatusForbidden, Code: "model_not_allowed", Param: "model",
			Message: "this key may not call the model " + strconv.Quote(req.Model)}, nil)
		return
	}
	rt := s.runtime()
	est := tokens.Estimate(req.InputBytes())
	pl := route.Make(rt.snap, &route.Input{Req: req, Attrs: s.attributes(r, key, req, rt.snap), InputTokens: est}, s.health, rt)
	if pub := unrouted(pl, req); pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	rr := pl.Route
	p := &engine.Plan{RequestID: c.id, Model: rr.Pool.Model}
	tokens, exact, served := 0, false, ""
	// Counting is free: it uses the rungs routing would try now, never a
	// last-resort probe.
	if pl.Verdict == route.Planned {
		rt.plan(pl.Order, p, false)
		for i := range p.Rungs {
			rg := &p.Rungs[i]
			counter, ok := rg.Adapter.(provider.TokenCounter)
			if !ok {
				continue
			}
			ctx, cancel := context.WithTimeout(r.Context(), rg.Deployment.Timeouts.FirstByte.D()+rg.Deployment.Timeouts.Connect.D())
			n, err := counter.CountTokens(ctx, &rg.Target, req)
			cancel()
			if err == nil {
				tokens, exact, served = n, true, rg.Deployment.ID
				break
			}
			s.opts.Log.Warn("counting tokens failed", "request_id", c.id, "deployment", rg.Deployment.ID, "err", failure.As(err))
		}
	}
	if !exact {
		tokens = est
	}
	hd := w.Header()
	hd.Set(hdrModel, rr.Pool.Model)
	if exact {
		hd.Set(hdrTokenCount, "exact")
		hd.Set(hdrDeployment, served)
	} else {
		hd.Set(hdrTokenCount, "estimate")
	}
	b := h.d.AppendCount(nil, tokens)
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	c.status, c.outcome = http.StatusOK, "ok"
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
