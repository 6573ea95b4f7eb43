package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// loadConfig loads the config the ledger flags point at, for the commands that
// check a model name against the routes.
func (lf ledgerFlags) loadConfig() (*catalog.Config, error) {
	p, err := lf.configPath()
	if err != nil {
		return nil, err
	}
	return catalog.Load(p)
}

// routedModels is the public model names cfg routes, sorted.
func routedModels(cfg *catalog.Config) []string {
	ms := make([]string, 0, len(cfg.Routes))
	for _, r := range cfg.Routes {
		ms = append(ms, r.Model)
	}
	slices.Sort(ms)
	return ms
}

// checkRouted refuses each model the config does not route; what names the
// flag or scope being checked, for the message.
func (lf ledgerFlags) checkRouted(what string, models ...string) error {
	cfg, err := lf.loadConfig()
	if err != nil {
		return fmt.Errorf("%s: cannot check the model against the config: %w (--config names the gateway's config)", what, err)
	}
	routed := routedModels(cfg)
	for _, m := range models {
		if !slices.Contains(routed, m) {
			return usageErrorf("%s: the config %s routes no model %q (it routes: %s)", what, lf.configName(), m, strings.Join(routed, ", "))
		}
	}
	return nil
}

// configName names the config for a message.
func (lf ledgerFlags) configName() string {
	p, err := lf.configPath()
	if err != nil {
		return "(none found)"
	}
	return p
}
