// Package quality measures what each deployment answers, without keeping
// any of it, and alerts when a pool's secondary answers differently from
// its primary: content-free signals per answer (signals.go), aggregates
// per deployment and a sequential test per secondary (monitor.go,
// detect.go).
package quality
