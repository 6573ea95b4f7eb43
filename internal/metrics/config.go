package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// WatchConfig exports the config holder's reload results, read at scrape
// time from status (a *catalog.Holder's Status): so that a file on disk
// being refused shows in a dashboard, not only in a log line.
func (m *Metrics) WatchConfig(status func() catalog.Status) {
	m.reg.MustRegister(&configCollector{status: status})
}

type configCollector struct{ status func() catalog.Status }

var (
	configReloadsDesc = prometheus.NewDesc("spillway_config_reloads_total",
		"Config reloads since start by result: applied, or refused (the last good config kept).", []string{"result"}, nil)
	configInfoDesc = prometheus.NewDesc("spillway_config_info",
		"1, labelled with the served config file's version (the first 12 hex digits of its SHA-256).", []string{"version"}, nil)
	configRefusedDesc = prometheus.NewDesc("spillway_config_last_reload_refused",
		"1 while the last reload since the served config was loaded was refused: the file on disk is not what is served.", nil, nil)
	configLoadedDesc = prometheus.NewDesc("spillway_config_loaded_timestamp_seconds",
		"When the served config was loaded, in Unix seconds.", nil, nil)
	configRefusedAtDesc = prometheus.NewDesc("spillway_config_last_refused_timestamp_seconds",
		"When the last reload was refused, in Unix seconds; absent while spillway_config_last_reload_refused is 0.", nil, nil)
)

func (c *configCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- configReloadsDesc
	ch <- configInfoDesc
	ch <- configRefusedDesc
	ch <- configLoadedDesc
	ch <- configRefusedAtDesc
}

func (c *configCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.status()
	ch <- prometheus.MustNewConstMetric(configReloadsDesc, prometheus.CounterValue, float64(s.Applied), "applied")
	ch <- prometheus.MustNewConstMetric(configReloadsDesc, prometheus.CounterValue, float64(s.Refused), "refused")
	ch <- prometheus.MustNewConstMetric(configInfoDesc, prometheus.GaugeValue, 1, s.Version)
	refused := 0.0
	if s.LastRefused != nil {
		refused = 1
		ch <- prometheus.MustNewConstMetric(configRefusedAtDesc, prometheus.GaugeValue, float64(s.LastRefused.At.UnixNano())/1e9)
	}
	ch <- prometheus.MustNewConstMetric(configRefusedDesc, prometheus.GaugeValue, refused)
	if !s.LoadedAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(configLoadedDesc, prometheus.GaugeValue, float64(s.LoadedAt.UnixNano())/1e9)
	}
}
