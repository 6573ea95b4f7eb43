// Package failure classifies failed provider attempts and maps each class to
// what the gateway does (fail over, count against health) and what the caller
// is told. It is the one place the classification table of DESIGN.md lives.
package failure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Class is the gateway's verdict on one failed attempt.
type Class string

const (
	Throttled               Class = "throttled"
	ProviderUnavailable     Class = "provider_unavailable"
	ProviderAuthentication  Class = "provider_authentication"
	ProviderCreditExhausted Class = "provider_credit_exhausted"
	ProviderBindingInvalid  Class = "provider_binding_invalid"
	InvalidRequest          Class = "invalid_request"
	// Refused: the model declined the request, and the route's refusal
	// failover held the refusal back and moved on to the next rung. Model
	// behaviour, not a provider fault: neutral to health, and it never
	// fails over by itself (FailsOver is false; the engine moves on only
	// where the route asks for it).
	Refused    Class = "refused"
	CallerGate Class = "caller_gate"
	// ClientCancelled: the caller went away. Never counted against a provider.
	ClientCancelled Class = "client_cancelled"
	// GatewayBusy: the gateway's own bound (the memory whole answers may
	// hold) refused the work. Never counted against a provider; no
	// failover, since the next rung would meet the same bound.
	GatewayBusy Class = "gateway_busy"
	// HedgedLost: the attempt raced a hedge and the other attempt committed
	// first, so the gateway cancelled this one. Neutral to health (the
	// provider did nothing wrong) and never the caller's answer.
	HedgedLost Class = "hedged_lost"
)

// FailsOver reports whether the chain advances to the next rung after a
// failure of this class.
func (c Class) FailsOver() bool {
	switch c {
	case Throttled, ProviderUnavailable, ProviderAuthentication, ProviderCreditExhausted, ProviderBindingInvalid:
		return true
	}
	return false
}

// CountsAgainstHealth reports whether the failure is the provider's fault and
// feeds its failure circuit. Throttling has its own window and is excluded.
func (c Class) CountsAgainstHealth() bool {
	switch c {
	case ProviderUnavailable, ProviderAuthentication, ProviderCreditExhausted, ProviderBindingInvalid:
		return true
	}
	return false
}

// Suppresses reports whether one failure of this class takes the deployment
// out of rotation at once (until a probe succeeds).
func (c Class) Suppresses() bool {
	switch c {
	case ProviderAuthentication, ProviderCreditExhausted, ProviderBindingInvalid:
		return true
	}
	return false
}

// Timeout names which silence bound fired.
type Timeout string

const (
	TimeoutConnect   Timeout = "connect"
	TimeoutFirstByte Timeout = "first_byte"
	TimeoutIdle      Timeout = "idle"
	TimeoutTotal     Timeout = "total"
)

// Error is one classified attempt failure. Message is safe to show a caller
// only for InvalidRequest; everything else is masked by Public. Detail and
// Err are for operator logs and never leave the gateway.
type Error struct {
	Class Class
	// Status is the provider's HTTP status; 0 when no response arrived.
	Status int
	// Timeout is set when a silence bound fired.
	Timeout Timeout
	// NoResponse is true when not one response byte arrived, so the same
	// rung may be retried once without risk of a duplicate generation.
	NoResponse bool
	// RetryAfter is the provider's requested delay, 0 when none.
	RetryAfter time.Duration
	// ProviderType and ProviderCode are the provider's own error type/code.
	ProviderType string
	ProviderCode string
	// Message is the provider's message, scrubbed, set for InvalidRequest
	// only (the one class that shows it); Param the field it names.
	Message string
	Param   string
	// Detail is an operator-only description.
	Detail string
	Err    error
}

func (e *Error) Error() string {
	s := string(e.Class)
	if e.Status != 0 {
		s += fmt.Sprintf(" (status %d)", e.Status)
	}
	if e.Timeout != "" {
		s += " (" + string(e.Timeout) + " timeout)"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

// Transport classifies a failure to exchange bytes with the provider:
// connection refused or reset, DNS, TLS. noResponse says whether any response
// byte had arrived. A network timeout before any response is the connect
// bound (dial or TLS handshake): a timeout, so the dead host is not tried
// again on the same rung and the caller is told 504.
func Transport(err error, noResponse bool) *Error {
	var ne net.Error
	if noResponse && errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded) {
		e := TimedOut(TimeoutConnect, true)
		e.Err = err
		return e
	}
	return &Error{Class: ProviderUnavailable, NoResponse: noResponse, Detail: "transport failure", Err: err}
}

// TimedOut classifies a silence bound firing.
func TimedOut(t Timeout, noResponse bool) *Error {
	return &Error{Class: ProviderUnavailable, Timeout: t, NoResponse: noResponse, Detail: "no data within the " + string(t) + " bound"}
}

// Truncated classifies a stream that ended without its terminal event.
func Truncated(detail string) *Error {
	return &Error{Class: ProviderUnavailable, Detail: "stream ended without its terminal event: " + detail}
}

// Malformed classifies a response the gateway could not parse.
func Malformed(detail string, err error) *Error {
	return &Error{Class: ProviderUnavailable, Detail: "malformed provider response: " + detail, Err: err}
}

// Cancelled is the verdict when the caller went away.
func Cancelled(err error) *Error {
	return &Error{Class: ClientCancelled, Detail: "caller disconnected", Err: err}
}
