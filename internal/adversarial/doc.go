// Package adversarial attacks a real spillway process as a hostile provider
// and as hostile callers, and checks that every attack ends in bounded time,
// in bounded memory and with the right answer.
//
// The package has no code of its own: its tests build cmd/spillway once
// (without -race), run it from a temporary directory as an operator would
// (spillway serve --config FILE), point its deployments at hostile
// httptest servers and at spillway's own mock providers, and sample the
// gateway process's resident memory (VmRSS in /proc/<pid>/status, every
// 20ms, and VmHWM at the end; Linux only) while each case runs. Each case
// logs its time and memory figures.
//
// The suite runs inside go test ./... and is skipped under -short. To run
// it alone, with the figures:
//
//	go test -race -count=1 -v ./internal/adversarial/
package adversarial
