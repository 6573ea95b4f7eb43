package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

func adminGet(t *testing.T, h *harness, path, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.gw.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metricLine returns the sample line of name (with its labels) in a
// scrape, or "".
func metricLine(scrape, name string) string {
	for _, l := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			return l
		}
	}
	return ""
}

// A refused reload shows in GET /v1/admin/config and /metrics until a
// good file is applied; the endpoint needs the admin key.
func TestAdminConfigReloadResults(t *testing.T) {
	var holder *catalog.Holder
	h := newHarnessOpts(t, nil, func(o *server.Options) { holder = o.Catalog.(*catalog.Holder) }, rungSpec{"a", catalog.KindAnthropic})

	if code, _ := adminGet(t, h, "/v1/admin/config", ""); code != http.StatusUnauthorized {
		t.Fatalf("without the admin key: %d", code)
	}
	if code, _ := adminGet(t, h, "/v1/admin/config", h.key); code != http.StatusUnauthorized {
		t.Fatalf("with a virtual key: %d", code)
	}

	dir := t.TempDir()
	good, err := yaml.Marshal(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spillway.yaml")
	bad := strings.Replace(string(good), "pool: pool", "pool: nosuch", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := holder.Reload(path); err == nil {
		t.Fatal("a route to an unknown pool was applied")
	}
	badSum := sha256.Sum256([]byte(bad))

	code, body := adminGet(t, h, "/v1/admin/config", adminKey)
	var rep map[string]any
	if err := json.Unmarshal([]byte(body), &rep); code != http.StatusOK || err != nil {
		t.Fatalf("%d %v: %s", code, err, body)
	}
	refused, _ := rep["last_refused"].(map[string]any)
	problems, _ := refused["problems"].([]any)
	if refused == nil || refused["version"] != hex.EncodeToString(badSum[:])[:12] || refused["at"] == "" ||
		len(problems) != 1 || !strings.Contains(problems[0].(string), `unknown pool "nosuch"`) {
		t.Errorf("last_refused: %s", body)
	}
	if active := rep["active"].(map[string]any); active["version"] != "" || active["loaded_at"] == "" {
		t.Errorf("active (built in code): %s", body)
	}
	_, scrape := adminGet(t, h, "/metrics", adminKey)
	for _, want := range []string{
		`spillway_config_reloads_total{result="refused"} 1`,
		`spillway_config_reloads_total{result="applied"} 0`,
		`spillway_config_last_reload_refused 1`,
		`spillway_config_info{version=""} 1`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %s:\n%s", want, metricLine(scrape, strings.SplitN(want, "{", 2)[0]))
		}
	}

	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := holder.Reload(path); err != nil {
		t.Fatal(err)
	}
	goodSum := sha256.Sum256(good)
	version := hex.EncodeToString(goodSum[:])[:12]
	_, body = adminGet(t, h, "/v1/admin/config", adminKey)
	var after struct {
		Active struct {
			Version, Path string
			LoadedAt      string `json:"loaded_at"`
		} `json:"active"`
		LastRefused *json.RawMessage `json:"last_refused"`
		Reloads     struct{ Applied, Refused int }
	}
	if err := json.Unmarshal([]byte(body), &after); err != nil {
		t.Fatal(err)
	}
	if after.Active.Version != version || after.Active.Path != path || after.Active.LoadedAt == "" || after.LastRefused != nil ||
		after.Reloads.Applied != 1 || after.Reloads.Refused != 1 || !strings.Contains(body, `"last_refused": null`) {
		t.Errorf("after a good reload: %s", body)
	}
	_, scrape = adminGet(t, h, "/metrics", adminKey)
	for _, want := range []string{
		`spillway_config_reloads_total{result="applied"} 1`,
		`spillway_config_last_reload_refused 0`,
		`spillway_config_info{version="` + version + `"} 1`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %s:\n%s", want, metricLine(scrape, strings.SplitN(want, "{", 2)[0]))
		}
	}
}

// A Snapshots that is not a Holder has no reload status to show.
func TestAdminConfigWithoutHolder(t *testing.T) {
	h := newHarnessOpts(t, nil, func(o *server.Options) { o.Catalog = fixedSnapshots{o.Catalog.Load()} }, rungSpec{"a", catalog.KindAnthropic})
	if code, body := adminGet(t, h, "/v1/admin/config", adminKey); code != http.StatusNotFound || !strings.Contains(body, "config_status_unavailable") {
		t.Errorf("%d %s", code, body)
	}
}

type fixedSnapshots struct{ s *catalog.Snapshot }

func (f fixedSnapshots) Load() *catalog.Snapshot { return f.s }
