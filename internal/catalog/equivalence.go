package catalog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultCertificationMaxAge is Equivalence.MaxAge's default: a
// certification is due again after 90 days (providers change model
// builds, quantisation and serving stacks without a new model id).
const DefaultCertificationMaxAge = 90 * 24 * time.Hour

// Age is a span written in days ("90d") or as a Go duration ("2160h").
type Age time.Duration

const day = 24 * time.Hour

// UnmarshalYAML reads "<N>d" or a Go duration; a bare number, a negative
// span and anything else are refused.
func (a *Age) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected an age such as \"90d\", got %s", describe(n))
	}
	if n.ShortTag() == "!!null" {
		return nil
	}
	s := strings.TrimSpace(n.Value)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(days)
		if err != nil || d < 0 || d > 100*365 {
			return fmt.Errorf("age %q: want a whole number of days from 0 to 36500, e.g. \"90d\"", n.Value)
		}
		*a = Age(time.Duration(d) * day)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("age %q: want days (\"90d\") or a Go duration (\"2160h\")", n.Value)
	}
	*a = Age(v)
	return nil
}

// MarshalYAML writes whole days as "<N>d", anything else as a Go duration.
func (a Age) MarshalYAML() (any, error) { return a.String(), nil }

// String is "<N>d" for whole days, else the Go duration.
func (a Age) String() string {
	if d := time.Duration(a); d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return time.Duration(a).String()
}

// Due reports how old the certification is at now (from its date, UTC
// midnight) and whether it is older than its MaxAge (default
// DefaultCertificationMaxAge). A MaxAge of whole days counts whole days:
// a 90d certification is due from the 91st day after its date. A date
// that does not parse is never due (validation refuses it). A negative
// age is a date in the future.
func (e *Equivalence) Due(now time.Time) (age time.Duration, due bool) {
	t, err := time.Parse(time.DateOnly, e.Date)
	if err != nil {
		return 0, false
	}
	limit := time.Duration(e.MaxAge)
	if limit <= 0 {
		limit = DefaultCertificationMaxAge
	}
	age = now.Sub(t)
	if limit%day == 0 {
		return age, age >= limit+day
	}
	return age, age > limit
}

// DueCertifications warns, per pool, of a certification older than its
// max_age at now, or dated in the future: for spillway check, which runs
// it on the config as loaded (serving does not depend on it).
func (c *Config) DueCertifications(file string, now time.Time) Problems {
	p := &problems{file: file, lines: c.lines}
	for i := range c.Pools {
		pl := &c.Pools[i]
		e := pl.Equivalence
		if e == nil {
			continue
		}
		field := "pools[" + strconv.Itoa(i) + "].equivalence.date"
		switch age, due := e.Due(now); {
		case due:
			limit := e.MaxAge
			if limit <= 0 {
				limit = Age(DefaultCertificationMaxAge)
			}
			p.add(field, pl.Line, "pool %q was certified %s, %d days ago: older than its max_age (%s); run spillway eval on it again and renew the certification",
				pl.ID, e.Date, int(age/day), limit)
		case age < -day:
			p.add(field, pl.Line, "pool %q is certified on %s, a date in the future", pl.ID, e.Date)
		}
	}
	return p.ps
}
