package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
)

// configStatus is what a Snapshots that reloads a file (a *catalog.Holder)
// says about it.
type configStatus interface {
	Status() catalog.Status
}

// ConfigReport is the body of GET /v1/admin/config: the config being
// served and the last file a reload refused since it was loaded.
type ConfigReport struct {
	Active ActiveConfig `json:"active"`
	// LastRefused is null when no reload was refused since Active loaded.
	LastRefused *RefusedConfig `json:"last_refused"`
	Reloads     ReloadCounts   `json:"reloads"`
}

// ActiveConfig is the config being served.
type ActiveConfig struct {
	// Version is the first 12 hex digits of the file's SHA-256 (compare
	// with sha256sum); empty for a config built in code.
	Version  string    `json:"version"`
	LoadedAt time.Time `json:"loaded_at"`
	Path     string    `json:"path"`
}

// RefusedConfig is a file a reload refused, and why.
type RefusedConfig struct {
	At       time.Time `json:"at"`
	Version  string    `json:"version"`
	Problems []string  `json:"problems"`
}

// ReloadCounts counts the reloads since start, by result.
type ReloadCounts struct {
	Applied int64 `json:"applied"`
	Refused int64 `json:"refused"`
}

func (s *Server) handleAdminConfig(w http.ResponseWriter, _ *http.Request) {
	cs, ok := s.opts.Catalog.(configStatus)
	if !ok {
		writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "config_status_unavailable",
			Message: "this gateway's config is not loaded from a file, so it has no reload status"})
		return
	}
	st := cs.Status()
	rep := ConfigReport{
		Active:  ActiveConfig{Version: st.Version, LoadedAt: st.LoadedAt.UTC(), Path: st.Path},
		Reloads: ReloadCounts{Applied: st.Applied, Refused: st.Refused},
	}
	if r := st.LastRefused; r != nil {
		rep.LastRefused = &RefusedConfig{At: r.At.UTC(), Version: r.Version, Problems: r.Problems}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
}
