package tracing

import (
	"net"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
)

// spillway's own attribute keys. Every value is a configured name, a
// fixed code or a number: never prompt or answer text, never a provider's
// message.
const (
	keyRequestID    = attribute.Key("spillway.request_id")
	keyDialect      = attribute.Key("spillway.dialect")
	keyRoute        = attribute.Key("spillway.route")
	keyPool         = attribute.Key("spillway.pool")
	keyDeployment   = attribute.Key("spillway.deployment")
	keyVerdict      = attribute.Key("spillway.verdict")
	keyFailureClass = attribute.Key("spillway.failure_class")
	keyCommitted    = attribute.Key("spillway.committed")
	keyCostStatus   = attribute.Key("spillway.cost_status")
	keyCost         = attribute.Key("spillway.cost_micro_usd")
	keyAttempts     = attribute.Key("spillway.attempts")
	keyHedge        = attribute.Key("spillway.hedge")
	keyExercise     = attribute.Key("spillway.exercise")
	keySticky       = attribute.Key("spillway.sticky")
	keyStream       = attribute.Key("spillway.stream")
	keyConfig       = attribute.Key("spillway.config_version")
	keyEstimated    = attribute.Key("spillway.usage_estimated")
	keySeq          = attribute.Key("spillway.attempt")
	keyRung         = attribute.Key("spillway.rung")
	keyRetry        = attribute.Key("spillway.retry")
	keyServed       = attribute.Key("spillway.served")
	keyTimeout      = attribute.Key("spillway.timeout")
	keyFirstByte    = attribute.Key("spillway.first_byte_ms")
	keyFirstToken   = attribute.Key("spillway.first_token_ms")
	keyReason       = attribute.Key("spillway.reason")
	keyModel        = attribute.Key("spillway.exact_model")
)

// Request is what a finished request's span records. Every field is
// optional: a request refused before routing has no Route and no Result.
type Request struct {
	ID      string
	Dialect string
	// Route is the matched route's public model name, Pool its pool id,
	// Model the exact model it serves ("" when no route matched: the
	// caller's text is never recorded).
	Route, Pool, Model string
	// ServedModel is the exact model that answered (another than Model
	// only through a route's fallback).
	ServedModel string
	// Status is the HTTP status answered; Outcome spillway's code for it
	// ("ok", an error code, "interrupted_<class>").
	Status  int
	Outcome string
	Stream  bool
	// Cost and CostStatus are the settled charge; Usage what was billed,
	// UsageEstimated when the provider reported none.
	Cost           int64
	CostStatus     string
	Usage          canonical.Usage
	UsageEstimated bool
	// Exercise and Sticky name the deployment routing put first to
	// exercise it, or for the conversation's pin ("" when none).
	Exercise, Sticky string
	// Dropped are the rungs the plan dropped, with their gates.
	Dropped []Dropped
	// Plan and Result are the engine's: the attempts and what served.
	Plan   *engine.Plan
	Result *engine.Result
}

// Dropped is one rung a plan dropped, and the gate that dropped it.
type Dropped struct{ Deployment, Reason string }

func requestStartAttrs(operation, method, route string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(operation),
		semconv.HTTPRequestMethodKey.String(method),
		semconv.HTTPRoute(route),
	}
}

// describe sets the request span's name, attributes, events and status.
func (r *Request) describe(s *Span) {
	sp := s.span
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs, keyRequestID.String(r.ID), keyDialect.String(r.Dialect),
		semconv.HTTPResponseStatusCode(r.Status), keyVerdict.String(r.Outcome), keyStream.Bool(r.Stream))
	if r.Route != "" {
		sp.SetName(s.operation + " " + r.Route)
		attrs = append(attrs, keyRoute.String(r.Route), keyPool.String(r.Pool), keyModel.String(r.Model),
			semconv.GenAIRequestModel(r.Route))
	}
	if s.Config != "" {
		attrs = append(attrs, keyConfig.String(s.Config))
	}
	if r.Exercise != "" {
		attrs = append(attrs, keyExercise.String(r.Exercise))
	}
	if r.Sticky != "" {
		attrs = append(attrs, keySticky.String(r.Sticky))
	}
	if r.CostStatus != "" {
		attrs = append(attrs, keyCostStatus.String(r.CostStatus), keyCost.Int64(r.Cost))
	}
	committed := false
	if res := r.Result; res != nil {
		attrs = append(attrs, keyAttempts.Int(len(res.Attempts)))
		if res.Hedge != "" {
			attrs = append(attrs, keyHedge.String(string(res.Hedge)))
		}
		if res.Err != nil {
			attrs = append(attrs, keyFailureClass.String(string(res.Err.Class)))
		}
		if k := res.ServingAttempt(); k >= 0 && r.Plan != nil {
			d := r.Plan.Rungs[res.Attempts[k].Rung].Deployment
			attrs = append(attrs, keyDeployment.String(d.ID), semconv.GenAIResponseModel(r.ServedModel),
				semconv.GenAIUsageInputTokens(r.Usage.InputTokens), semconv.GenAIUsageOutputTokens(r.Usage.OutputTokens),
				keyEstimated.Bool(r.UsageEstimated))
			if res.Stop != "" {
				attrs = append(attrs, semconv.GenAIResponseFinishReasons(string(res.Stop)))
			}
		}
		// A stream commits at its first content; a whole answer when it
		// is written.
		committed = res.Committed || (!r.Stream && res.Err == nil && r.Status == 200)
		for _, sk := range res.Skipped {
			sp.AddEvent("spillway.rung_skipped", trace.WithAttributes(keyDeployment.String(sk.Deployment), keyReason.String(sk.Reason)))
		}
	}
	attrs = append(attrs, keyCommitted.Bool(committed))
	for _, d := range r.Dropped {
		sp.AddEvent("spillway.rung_dropped", trace.WithAttributes(keyDeployment.String(d.Deployment), keyReason.String(d.Reason)))
	}
	sp.SetAttributes(attrs...)
	// As HTTP servers do: a 5xx is the gateway's error, a 4xx the
	// caller's; a stream cut after commit failed though it began as 200.
	if r.Status >= 500 || (r.Status == 200 && r.Outcome != "ok") {
		sp.SetAttributes(semconv.ErrorTypeKey.String(r.Outcome))
		sp.SetStatus(codes.Error, r.Outcome)
	}
}

// attemptAttrs are attempt i's attributes: the GenAI client call it was,
// and what spillway made of it.
func attemptAttrs(operation string, r *Request, i int, d *catalog.Deployment) []attribute.KeyValue {
	res := r.Result
	a := &res.Attempts[i]
	attrs := make([]attribute.KeyValue, 0, 20)
	attrs = append(attrs, semconv.GenAIOperationNameKey.String(operation), providerName(d.Provider),
		semconv.GenAIRequestModel(d.Model), keyDeployment.String(d.ID), keyModel.String(r.Plan.ModelOf(a.Rung)),
		keySeq.Int(i), keyRung.Int(a.Rung), keyRetry.Bool(a.Retry), keyVerdict.String(a.Outcome()))
	if host, port := hostPort(d.BaseURL); host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	if a.FirstByte > 0 {
		attrs = append(attrs, keyFirstByte.Int64(a.FirstByte.Milliseconds()))
	}
	if a.FirstToken > 0 {
		attrs = append(attrs, keyFirstToken.Int64(a.FirstToken.Milliseconds()))
	}
	served := i == res.ServingAttempt()
	attrs = append(attrs, keyServed.Bool(served))
	switch {
	case served:
		attrs = append(attrs, semconv.GenAIResponseModel(d.Model))
		if res.UsageReported {
			attrs = append(attrs, semconv.GenAIUsageInputTokens(res.Usage.InputTokens), semconv.GenAIUsageOutputTokens(res.Usage.OutputTokens))
		}
		if res.Stop != "" {
			attrs = append(attrs, semconv.GenAIResponseFinishReasons(string(res.Stop)))
		}
	case a.UsageReported:
		// What a failed, refused or cancelled attempt had consumed: the
		// operator pays for it.
		attrs = append(attrs, semconv.GenAIUsageInputTokens(a.Usage.InputTokens), semconv.GenAIUsageOutputTokens(a.Usage.OutputTokens))
	}
	if e := a.Err; e != nil {
		attrs = append(attrs, keyFailureClass.String(string(e.Class)), semconv.ErrorTypeKey.String(string(e.Class)))
		if e.Status != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(e.Status))
		}
		if e.Timeout != "" {
			attrs = append(attrs, keyTimeout.String(string(e.Timeout)))
		}
	} else {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(200))
	}
	return attrs
}

// attemptStatus is an attempt span's status: an error when the provider
// failed it (its class, never its message); unset when it served, lost a
// hedge's race or was left by the caller.
func attemptStatus(a *engine.Attempt) (codes.Code, string) {
	if a.Err == nil {
		return 0, ""
	}
	switch a.Err.Class {
	case failure.HedgedLost, failure.ClientCancelled:
		return 0, ""
	}
	return codes.Error, string(a.Err.Class)
}

// providerName is gen_ai.provider.name for an adapter kind: the semantic
// conventions' well-known value where one applies.
func providerName(kind string) attribute.KeyValue {
	switch kind {
	case catalog.KindOpenAI:
		return semconv.GenAIProviderNameOpenAI
	case catalog.KindAnthropic:
		return semconv.GenAIProviderNameAnthropic
	case catalog.KindBedrock:
		return semconv.GenAIProviderNameAWSBedrock
	case catalog.KindGemini:
		return semconv.GenAIProviderNameGCPGemini
	}
	return semconv.GenAIProviderNameKey.String(kind)
}

// hostPort is server.address and server.port of a deployment's base URL
// (the configured URL, which validation keeps free of credentials).
func hostPort(base string) (string, int) {
	u, err := url.Parse(base)
	if err != nil {
		return "", 0
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return host, port
}
