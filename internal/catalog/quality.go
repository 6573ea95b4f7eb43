package catalog

import "strconv"

// PoolQuality sets how a pool's secondaries are compared with its primary
// (the first deployment) on the content-free quality signals spillway
// measures per answer. The zero value means every default; detection
// always runs for a pool of two deployments or more.
type PoolQuality struct {
	// FalseAlarm is the chance that a secondary answering exactly as the
	// primary raises any alert within Horizon of its answers: from 0.0001
	// to 0.2. Default 0.01. Smaller is quieter and slower to detect.
	FalseAlarm float64 `yaml:"false_alarm,omitempty"`
	// Horizon is how many of a secondary's answers FalseAlarm is over:
	// from 100 to 100,000,000. Default 5000.
	Horizon int `yaml:"horizon,omitempty"`
	// Shift is the smallest change of a rate (absolute, e.g. 0.03 for a
	// field populated in 97% of answers instead of 100%) the test is tuned
	// to find soon: from 0.005 to 0.5. Default 0.03.
	Shift float64 `yaml:"shift,omitempty"`
	// Eject makes a diverging secondary ineligible in this pool until an
	// operator clears the alert (spillway quality clear). Default false:
	// alerts only.
	Eject bool `yaml:"eject,omitempty"`
}

// ApplyDefaults fills PoolQuality's zero fields.
func (q *PoolQuality) ApplyDefaults() {
	setDefault(&q.FalseAlarm, DefaultQualityFalseAlarm)
	setDefault(&q.Horizon, DefaultQualityHorizon)
	setDefault(&q.Shift, DefaultQualityShift)
}

func (c *Config) applyQualityDefaults() {
	for i := range c.Pools {
		c.Pools[i].Quality.ApplyDefaults()
	}
}

func (c *Config) validateQuality(p *problems) {
	for i := range c.Pools {
		pl := &c.Pools[i]
		q := &pl.Quality
		at := "pools[" + strconv.Itoa(i) + "].quality."
		if !(q.FalseAlarm >= 0.0001 && q.FalseAlarm <= 0.2) {
			p.add(at+"false_alarm", pl.Line, "%v is not a false-alarm rate from 0.0001 to 0.2 (default %v)", q.FalseAlarm, DefaultQualityFalseAlarm)
		}
		if q.Horizon < 100 || q.Horizon > 100_000_000 {
			p.add(at+"horizon", pl.Line, "%d is not a number of answers from 100 to 100000000 (default %d)", q.Horizon, DefaultQualityHorizon)
		}
		if !(q.Shift >= 0.005 && q.Shift <= 0.5) {
			p.add(at+"shift", pl.Line, "%v is not a rate change from 0.005 to 0.5 (default %v)", q.Shift, DefaultQualityShift)
		}
	}
}
