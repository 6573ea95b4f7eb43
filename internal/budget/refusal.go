package budget

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Gates, in the order Reserve reports them: the most lasting reason first,
// so that a caller is not told to retry in a second when its credit is gone.
const (
	gateCredit = iota
	gateDaily
	gateRPM
	gateTPM
)

// Refusal is a gate saying no. Its Code is stable and names the scope and
// the limit; its Message names the limit, its value and what to do, and
// never another scope's data or any spend figure.
type Refusal struct {
	Scope Scope
	// Code is org_credit_exhausted, {key,team,model}_budget_exceeded,
	// {scope}_daily_cap_reached, {scope}_rpm_exceeded or {scope}_tpm_exceeded.
	Code    string
	Message string
	// RetryAfter is when retrying can succeed: for RPM/TPM when the window
	// has freed enough, for a daily cap the next UTC midnight; 0 for credit
	// and for a request that exceeds a limit on its own (retrying cannot help).
	RetryAfter time.Duration
	// status is the HTTP status when not 429 (503 budget_unavailable).
	status int
}

func (r *Refusal) Error() string { return "budget: " + r.Code + ": " + r.Message }

// Public is the refusal as the caller is told it: 429 with the specific
// code, in whatever dialect the server renders it.
func (r *Refusal) Public() *failure.Public {
	status := http.StatusTooManyRequests
	if r.status != 0 {
		status = r.status
	}
	return &failure.Public{Status: status, Code: r.Code, Message: r.Message, RetryAfter: r.RetryAfter}
}

// code names the refusal of gate g at scope kind.
func code(kind string, g int) string {
	switch g {
	case gateCredit:
		if kind == ledger.ScopeOrg {
			return "org_credit_exhausted"
		}
		return kind + "_budget_exceeded"
	case gateDaily:
		return kind + "_daily_cap_reached"
	case gateRPM:
		return kind + "_rpm_exceeded"
	}
	return kind + "_tpm_exceeded"
}

// refuse builds the refusal of gate g. limit is the gate's value and ask
// what the request asked of it (micro-dollars or tokens); alone is true when
// ask exceeds limit by itself, so waiting cannot help.
func refuse(sc Scope, g int, limit, ask int64, alone bool, retry time.Duration) *Refusal {
	what := sc.Kind
	if sc.Kind == ledger.ScopeOrg && g == gateCredit {
		what = "organisation"
	}
	var msg string
	switch {
	case g == gateCredit && alone:
		msg = fmt.Sprintf("the request's worst-case cost of %s is more than the %s budget of %s; lower max_tokens or ask an administrator to raise the budget",
			usd(ask), what, usd(limit))
	case g == gateCredit && sc.Kind == ledger.ScopeOrg:
		msg = fmt.Sprintf("the organisation's credit of %s is used up or held by requests in flight; add credit before retrying", usd(limit))
	case g == gateCredit:
		msg = fmt.Sprintf("the %s budget of %s has too little left for this request's worst-case cost of %s; ask an administrator to raise it",
			what, usd(limit), usd(ask))
	case g == gateDaily && alone:
		msg = fmt.Sprintf("the request's worst-case cost of %s is more than the %s daily cap of %s; lower max_tokens", usd(ask), what, usd(limit))
	case g == gateDaily:
		msg = fmt.Sprintf("the %s daily cap of %s is reached; it resets at midnight UTC (see the Retry-After header), or lower max_tokens", what, usd(limit))
	case g == gateRPM:
		msg = fmt.Sprintf("the %s limit of %d requests per minute is reached; retry after the delay in the Retry-After header", what, limit)
	case alone:
		msg = fmt.Sprintf("the request's %d tokens (input estimate plus output ceiling) are more than the %s limit of %d tokens per minute; lower max_tokens or shorten the input",
			ask, what, limit)
	default:
		msg = fmt.Sprintf("the %s limit of %d tokens per minute is reached; retry after the delay in the Retry-After header, or lower max_tokens", what, limit)
	}
	return &Refusal{Scope: sc, Code: code(sc.Kind, g), Message: msg, RetryAfter: retry}
}

// usd formats micro-dollars as dollars, with at least two decimals and no
// trailing zeros past them: 1500000 → "$1.50", 1234 → "$0.001234".
func usd(micro int64) string {
	var b strings.Builder
	if micro < 0 {
		b.WriteByte('-')
		micro = -micro // MinInt64 cannot occur: limits are clamped at 0
	}
	b.WriteByte('$')
	b.WriteString(strconv.FormatInt(micro/1e6, 10))
	frac := fmt.Sprintf("%06d", micro%1e6)
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	b.WriteByte('.')
	b.WriteString(frac)
	return b.String()
}
