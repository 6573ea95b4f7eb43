package redisstate

import (
	"testing"
	"time"
)

// When Redis returns, the subscriber listens again as soon as the monitor
// finds it up, not up to a retry_every later: until it listens, what other
// replicas publish reaches this one only through the resync. Measured
// across processes with retry_every 1s: an outage replica A saw right
// after Redis returned reached B and C ~860 ms after A's circuit opened;
// 2-3 ms with the wake-up. Four outages: with the old wait (a uniform
// gap of 0 to retry_every) all four would be this quick 0.4% of the time.
func TestListensAgainOnceRedisIsBack(t *testing.T) {
	const retryEvery = 400 * time.Millisecond
	proxy, url := newProxy(t, redisURL(t))
	c := open(t, url, testPrefix(), func(o *Options) { o.RetryEvery = retryEvery })
	waitSubscribed(t, c)
	for i := range 4 {
		proxy.Cut(true)
		waitFor(t, 5*time.Second, "marked down", func() bool { return !c.Up() && !c.Listening() })
		time.Sleep(retryEvery)
		proxy.Cut(false)
		waitFor(t, 5*time.Second, "up again", c.Up)
		upAt := time.Now()
		waitFor(t, 5*time.Second, "listening again", c.Listening)
		if d := time.Since(upAt); d > retryEvery/4 {
			t.Errorf("outage %d: listening %s after Redis was found up, want at once (retry_every %s)", i, d, retryEvery)
		}
	}
}
