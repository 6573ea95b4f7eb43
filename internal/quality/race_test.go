//go:build race

package quality

// raceEnabled: the race detector slows the simulation several times, so
// the seeded test runs fewer seeds under it.
const raceEnabled = true
