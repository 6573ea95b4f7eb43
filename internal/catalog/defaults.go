package catalog

import (
	"strings"
	"time"
)

// Defaults, applied by ApplyDefaults to every field left zero.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultMaxBodyBytes      = 8 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownGrace     = 30 * time.Second
	DefaultBodyTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 30 * time.Second

	DefaultConnectTimeout   = 5 * time.Second
	DefaultFirstByteTimeout = 15 * time.Second
	DefaultIdleEventTimeout = 30 * time.Second
	DefaultTotalTimeout     = 10 * time.Minute

	// Pool quality detection (pools[].quality): identical deployments
	// raise an alert within 5,000 answers with a chance of at most 1%,
	// and the test is tuned for a 3-point change of a rate.
	DefaultQualityFalseAlarm = 0.01
	DefaultQualityHorizon    = 5000
	DefaultQualityShift      = 0.03
)

// ApplyDefaults fills every zero field that has a default, as documented on
// the field, and trims a trailing slash from base URLs (adapters append
// their own paths). It is idempotent and never overwrites a set value.
func (c *Config) ApplyDefaults() {
	s := &c.Server
	setDefault(&s.Listen, DefaultListen)
	setDefault(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&s.ReadHeaderTimeout, Duration(DefaultReadHeaderTimeout))
	setDefault(&s.IdleTimeout, Duration(DefaultIdleTimeout))
	setDefault(&s.ShutdownGrace, Duration(DefaultShutdownGrace))
	setDefault(&s.BodyTimeout, Duration(DefaultBodyTimeout))
	setDefault(&s.WriteTimeout, Duration(DefaultWriteTimeout))
	setDefault(&s.MaxAnswerMemory, int64(256<<20))
	setDefault(&s.MetricsAuth, MetricsAuthLoopback)
	setDefault(&c.Routing.WorkloadHeader, "X-Spillway-Workload")
	setDefault(&c.Routing.ResidencyHeader, "X-Spillway-Residency")
	c.applyStickyDefaults()
	setDefault(&s.Limits.MaxMessages, 10000)
	setDefault(&s.Limits.MaxParts, 1000)
	setDefault(&s.Limits.MaxTools, 128)
	setDefault(&s.Limits.MaxToolCalls, 128)
	setDefault(&s.Limits.MaxStopSequences, 16)
	c.applyLedgerDefaults()
	setDefault(&c.Ledger.Path, "spillway.db")
	setDefault(&c.Ledger.MinFreeBytes, int64(32<<20))
	setDefault(&c.Idempotency.MaxEntries, 10000)
	setDefault(&c.Idempotency.MaxBytes, int64(64<<20))
	setDefault(&c.Idempotency.TTL, Duration(24*time.Hour))
	for i := range c.Deployments {
		d := &c.Deployments[i]
		setDefault(&d.Funding, FundingHost)
		if a := d.AWS; a != nil {
			setDefault(&a.AccessKeyEnv, "AWS_ACCESS_KEY_ID")
			setDefault(&a.SecretKeyEnv, "AWS_SECRET_ACCESS_KEY")
			setDefault(&a.SessionTokenEnv, "AWS_SESSION_TOKEN")
		}
		d.BaseURL = strings.TrimRight(d.BaseURL, "/")
		t := &d.Timeouts
		setDefault(&t.Total, Duration(DefaultTotalTimeout))
		// A short Total caps the defaults below it, so that setting only
		// total: 10s does not make the defaults contradict it.
		setDefault(&t.Connect, min(Duration(DefaultConnectTimeout), t.Total))
		setDefault(&t.FirstByte, min(Duration(DefaultFirstByteTimeout), t.Total))
		setDefault(&t.Idle, min(Duration(DefaultIdleEventTimeout), t.Total))
	}
	for i := range c.Pools {
		setDefault(&c.Pools[i].Kind, PoolChat)
	}
	c.applyRouteDefaults()
	c.applyHedgeDefaults()
	c.applyQualityDefaults()
	c.applySharedStateDefaults()
	c.applyTelemetryDefaults()
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}
