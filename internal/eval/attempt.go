package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Causes of a cancelled attempt: which bound fired.
var (
	errFirstByte = errors.New("first_byte")
	errIdle      = errors.New("idle")
	errTotal     = errors.New("total")
)

// errTooLarge: the answer passed Options.MaxAnswerBytes.
var errTooLarge = errors.New("answer too large")

// attempt sends req to the deployment and assembles its streamed answer,
// under the deployment's silence bounds (first byte, idle between events)
// and the smaller of its total bound and the case timeout. An error is a
// *failure.Error, errTooLarge, or ctx's own error when the run was
// cancelled.
func (dr *depRunner) attempt(parent context.Context, req *canonical.Request) (*Answer, error) {
	t := &dr.d.Timeouts
	total := dr.o.Timeout
	if d := t.Total.D(); d > 0 && d < total {
		total = d
	}
	ctx, cancel := context.WithTimeoutCause(parent, total, errTotal)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var started atomic.Bool
	watch := time.AfterFunc(bound(t.FirstByte, catalog.DefaultFirstByteTimeout), func() {
		if started.Load() {
			stop(errIdle)
		} else {
			stop(errFirstByte)
		}
	})
	defer watch.Stop()
	idle := bound(t.Idle, catalog.DefaultIdleEventTimeout)

	s, err := dr.adapter.Stream(ctx, &dr.target, req)
	if err != nil {
		return nil, verdict(parent, ctx, err, true)
	}
	defer s.Close()
	a := &Answer{}
	var calls map[int]int // stream index → place in a.ToolCalls
	var text, refusal []byte
	size := 0
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, verdict(parent, ctx, err, !started.Load())
		}
		started.Store(true)
		watch.Reset(idle)
		if size += len(ev.Text) + len(ev.ID) + len(ev.Name); size > dr.o.MaxAnswerBytes {
			return nil, errTooLarge
		}
		switch ev.Kind {
		case canonical.EventTextDelta:
			text = append(text, ev.Text...)
		case canonical.EventRefusalDelta:
			refusal = append(refusal, ev.Text...)
		case canonical.EventToolCallStart:
			if calls == nil {
				calls = map[int]int{}
			}
			calls[ev.Index] = len(a.ToolCalls)
			a.ToolCalls = append(a.ToolCalls, canonical.ToolCall{ID: ev.ID, Name: ev.Name, Arguments: ev.Text})
		case canonical.EventToolCallDelta:
			if i, ok := calls[ev.Index]; ok {
				a.ToolCalls[i].Arguments += ev.Text
			}
		case canonical.EventUsage:
			a.Usage = ev.Usage
		case canonical.EventStop:
			a.Stop = ev.Stop
		}
	}
	a.Text, a.Refusal = string(text), string(refusal)
	return a, nil
}

// bound is a silence bound, or its default when unset.
func bound(d catalog.Duration, def time.Duration) time.Duration {
	if d.D() > 0 {
		return d.D()
	}
	return def
}

// verdict classifies an attempt's error: the run's own cancellation as
// itself, a bound that fired as that timeout, the adapter's classified
// failure as it is, anything else as a transport failure.
func verdict(parent, ctx context.Context, err error, noResponse bool) error {
	if perr := parent.Err(); perr != nil {
		return perr
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errFirstByte):
		return failure.TimedOut(failure.TimeoutFirstByte, noResponse)
	case errors.Is(cause, errIdle):
		return failure.TimedOut(failure.TimeoutIdle, noResponse)
	case errors.Is(cause, errTotal):
		return failure.TimedOut(failure.TimeoutTotal, noResponse)
	}
	if fe := failure.As(err); fe != nil {
		return fe
	}
	return failure.Transport(err, noResponse)
}

// errorMiss names an attempt's error for the report: its kind (a stable
// word the evidence hash covers) and the detail.
func errorMiss(err error) Miss {
	if errors.Is(err, errTooLarge) {
		return Miss{Check: "answer_too_large", Why: "the answer passed the answer size bound"}
	}
	fe := failure.As(err)
	switch {
	case fe == nil:
		return Miss{Check: "error", Why: err.Error()}
	case fe.Timeout == failure.TimeoutConnect && fe.NoResponse:
		return Miss{Check: "unreachable", Why: "no connection within the connect bound: " + fe.Error()}
	case fe.Timeout != "":
		return Miss{Check: "timeout", Why: fmt.Sprintf("no answer within the %s bound: %s", fe.Timeout, fe.Error())}
	case fe.Class == failure.ProviderUnavailable && fe.Status == 0 && fe.NoResponse:
		return Miss{Check: "unreachable", Why: fe.Error()}
	case fe.Status != 0:
		return Miss{Check: fmt.Sprintf("http_%d", fe.Status), Why: fe.Error()}
	}
	return Miss{Check: string(fe.Class), Why: fe.Error()}
}
