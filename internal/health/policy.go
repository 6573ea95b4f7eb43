// Package health tracks whether each deployment should get traffic now:
// a consecutive-failure circuit with a half-open probe, a throttle window
// for 429s, immediate suppression on credential/credit/binding failures,
// and rolling error-rate and first-token-latency cooldowns. Everything is in
// process and lock-light; nothing here does I/O.
package health

import "time"

// Policy holds one deployment's thresholds. The zero value of each field
// means its default (see Defaults).
type Policy struct {
	// FailureThreshold consecutive operational failures open the circuit.
	// Default 2.
	FailureThreshold int
	// OpenFor is how long an open circuit skips the deployment before one
	// half-open probe. Default 30s.
	OpenFor time.Duration
	// RecoverySuccesses consecutive probe successes close a half-open
	// circuit. Default 1 (the probe's success closes it).
	RecoverySuccesses int
	// ThrottleFor is the throttle window after a 429 that carried no
	// Retry-After. Default 30s. A Retry-After is honoured as given, capped
	// at MaxThrottle.
	ThrottleFor time.Duration
	// MaxThrottle caps a provider's Retry-After. Default 5m.
	MaxThrottle time.Duration
	// SuppressFor is how long a suppressed deployment (provider credential,
	// credit or binding failure) waits before a probe. Default 60s.
	SuppressFor time.Duration
	// Window is the rolling window for error rate and latency. Default 60s.
	Window time.Duration
	// MinSamples is the fewest attempts in the window before the error rate
	// or latency can trip a cooldown. Default 10.
	MinSamples int
	// MaxErrorRate above which (0..1) the deployment cools down. Default
	// 0.5; negative disables.
	MaxErrorRate float64
	// MaxFirstTokenP95 above which the deployment cools down. Default 0
	// (disabled).
	MaxFirstTokenP95 time.Duration
	// Cooldown is how long an error-rate or latency breach skips the
	// deployment before a probe. Default 30s.
	Cooldown time.Duration
	// LastResortEvery bounds last-resort probes to one per deployment per
	// interval when every rung of a route is skipped. Default 1s.
	LastResortEvery time.Duration
}

// Defaults returns the policy a deployment gets when it says nothing.
func Defaults() Policy {
	return Policy{
		FailureThreshold:  2,
		OpenFor:           30 * time.Second,
		RecoverySuccesses: 1,
		ThrottleFor:       30 * time.Second,
		MaxThrottle:       5 * time.Minute,
		SuppressFor:       60 * time.Second,
		Window:            60 * time.Second,
		MinSamples:        10,
		MaxErrorRate:      0.5,
		Cooldown:          30 * time.Second,
		LastResortEvery:   time.Second,
	}
}

// withDefaults fills zero fields from Defaults.
func (p Policy) withDefaults() Policy {
	d := Defaults()
	if p.FailureThreshold > 0 {
		d.FailureThreshold = p.FailureThreshold
	}
	if p.OpenFor > 0 {
		d.OpenFor = p.OpenFor
	}
	if p.RecoverySuccesses > 0 {
		d.RecoverySuccesses = p.RecoverySuccesses
	}
	if p.ThrottleFor > 0 {
		d.ThrottleFor = p.ThrottleFor
	}
	if p.MaxThrottle > 0 {
		d.MaxThrottle = p.MaxThrottle
	}
	if p.SuppressFor > 0 {
		d.SuppressFor = p.SuppressFor
	}
	if p.Window > 0 {
		d.Window = p.Window
	}
	if p.MinSamples > 0 {
		d.MinSamples = p.MinSamples
	}
	if p.MaxErrorRate != 0 {
		d.MaxErrorRate = p.MaxErrorRate
	}
	if p.MaxFirstTokenP95 > 0 {
		d.MaxFirstTokenP95 = p.MaxFirstTokenP95
	}
	if p.Cooldown > 0 {
		d.Cooldown = p.Cooldown
	}
	if p.LastResortEvery > 0 {
		d.LastResortEvery = p.LastResortEvery
	}
	return d
}
