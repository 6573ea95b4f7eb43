package catalog

import "math"

// Log configures the gateway's logging. It is read at start-up only; a
// reload does not change it.
type Log struct {
	// Access samples the access log (one line per request) per outcome.
	Access AccessLog `yaml:"access,omitempty"`
}

// AccessLog is the share of requests, 0 to 1, whose access-log line is
// written, per outcome class. Unset (the default): 1, every line, as
// before sampling existed; 0: none of that class. Metrics, the ledger and
// traces count every request whatever the sampling.
type AccessLog struct {
	// OK: answered (status ok, an idempotent replay included).
	OK *float64 `yaml:"ok,omitempty"`
	// ClientError: refused or abandoned by the caller's side (4xx, 499).
	ClientError *float64 `yaml:"client_error,omitempty"`
	// Error: failed on the gateway's or a provider's side (5xx), or a
	// stream that broke after it began.
	Error *float64 `yaml:"error,omitempty"`
}

// Rates returns the three sample rates, 1 where unset.
func (a *AccessLog) Rates() (ok, clientError, err float64) {
	r := func(v *float64) float64 {
		if v == nil {
			return 1
		}
		return *v
	}
	return r(a.OK), r(a.ClientError), r(a.Error)
}

// validateLog checks that every sample rate is a share.
func (c *Config) validateLog(p *problems) {
	a := &c.Log.Access
	for _, f := range []struct {
		name string
		v    *float64
	}{{"ok", a.OK}, {"client_error", a.ClientError}, {"error", a.Error}} {
		if f.v != nil && (math.IsNaN(*f.v) || *f.v < 0 || *f.v > 1) {
			p.add("log.access."+f.name, 0, "%v is outside 0..1 (the share of those requests whose access-log line is written)", *f.v)
		}
	}
}
