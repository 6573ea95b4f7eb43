package ledger

import (
	"errors"
	"math"
	"time"
)

// Limits are a scope's budget and rate limits as an operator writes them
// (the admin API's bodies, the CLI's flags); nil or zero means no limit.
type Limits struct {
	CreditUSD   *float64 `json:"credit_usd,omitempty"`
	DailyCapUSD *float64 `json:"daily_cap_usd,omitempty"`
	RPM         int      `json:"rpm,omitempty"`
	TPM         int      `json:"tpm,omitempty"`
}

// Empty reports whether no limit is set.
func (l *Limits) Empty() bool {
	return l.CreditUSD == nil && l.DailyCapUSD == nil && l.RPM == 0 && l.TPM == 0
}

// Budget turns limits into the budget row of a scope.
func (l *Limits) Budget(scope, id string, now time.Time) (*Budget, error) {
	b := &Budget{Scope: scope, ID: id, RPM: l.RPM, TPM: l.TPM, UpdatedAt: now.UTC()}
	var err error
	if b.CreditMicroUSD, err = microUSD(l.CreditUSD); err != nil {
		return nil, err
	}
	if b.DailyCapMicroUSD, err = microUSD(l.DailyCapUSD); err != nil {
		return nil, err
	}
	if l.RPM < 0 || l.TPM < 0 {
		return nil, errors.New("rpm and tpm must not be negative")
	}
	return b, nil
}

// microUSD converts dollars to micro-dollars, refusing what no budget can
// be: negative, not finite, or beyond a trillion dollars.
func microUSD(usd *float64) (*int64, error) {
	if usd == nil {
		return nil, nil
	}
	if !(*usd >= 0) || math.IsInf(*usd, 0) || *usd > 1e12 {
		return nil, errors.New("amounts must be finite and not negative")
	}
	v := int64(math.Round(*usd * 1e6))
	return &v, nil
}
