package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/quality"
	"github.com/spillway-gw/spillway/internal/server"
)

// extractionBody is a structured-output request (seed 004's extraction).
func extractionBody(stream bool) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"` + publicModel + `","stream":` + s + `,"max_tokens":512,"messages":[{"role":"user","content":"extract"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"policy","schema":{"type":"object",` +
		`"properties":{"insured":{"type":"string"},"effective_date":{"type":"string"}},"required":["insured","effective_date"]}}}}`
}

func qualityReport(t *testing.T, h *harness) quality.Report {
	t.Helper()
	code, body := adminGet(t, h, "/v1/admin/quality", adminKey)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/admin/quality: %d %s", code, body)
	}
	var rep quality.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func explainRung(t *testing.T, h *harness, dep string) server.ExplainedRung {
	t.Helper()
	code, body := adminGet(t, h, "/v1/admin/explain?model="+publicModel, adminKey)
	if code != http.StatusOK {
		t.Fatalf("explain: %d %s", code, body)
	}
	var ex server.Explanation
	if err := json.Unmarshal([]byte(body), &ex); err != nil {
		t.Fatal(err)
	}
	for _, r := range ex.Rungs {
		if r.Deployment == dep {
			return r
		}
	}
	t.Fatalf("explain has no rung %s: %s", dep, body)
	return server.ExplainedRung{}
}

func clearQuality(t *testing.T, h *harness, pool, dep string) (int, string) {
	t.Helper()
	resp, err := h.post("/v1/admin/quality/clear", `{"pool":"`+pool+`","deployment":"`+dep+`"}`, "Authorization", "Bearer "+adminKey)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A secondary seeded to drop a field is found diverging once it serves
// (the primary down): the alert is in the admin API, the metrics and the
// log; with eject the planner skips it and explain says why, until an
// operator clears it.
func TestQualityDivergenceE2E(t *testing.T) {
	for _, eject := range []bool{false, true} {
		t.Run(map[bool]string{false: "alert", true: "eject"}[eject], func(t *testing.T) {
			h := newHarnessWith(t, func(c *catalog.Config) {
				// A large shift: the test needs a baseline of 50 answers,
				// not a thousand (the defaults are measured in
				// internal/quality).
				c.Pools[0].Quality = catalog.PoolQuality{Shift: 0.3, Horizon: 1000, Eject: eject}
			}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
			h.fault("secondary", "omit_field=effective_date;p=0.7")
			for i := range 60 {
				if r := h.do(t, extractionBody(i%2 == 1)); r.status != http.StatusOK || r.header.Get("X-Spillway-Deployment") != "primary" {
					t.Fatalf("baseline request %d: %d from %q: %s", i, r.status, r.header.Get("X-Spillway-Deployment"), r.body)
				}
			}
			if rep := qualityReport(t, h); len(rep.Alerts) != 0 {
				t.Fatalf("alerts before the secondary served: %+v", rep.Alerts)
			}
			// The primary goes down: the secondary serves until found.
			h.fault("primary", "status=529")
			found := -1
			for i := range 80 {
				r := h.do(t, extractionBody(i%2 == 0))
				if r.status != http.StatusOK {
					if eject {
						break // ejected while the primary is down: nothing serves
					}
					t.Fatalf("failover request %d: %d %s", i, r.status, r.body)
				}
				if rep := qualityReport(t, h); len(rep.Alerts) > 0 {
					found = i + 1
					break
				}
			}
			rep := qualityReport(t, h)
			var alert *quality.Alert
			for i := range rep.Alerts {
				if a := &rep.Alerts[i]; a.Signal == quality.SigField && a.Field == "effective_date" {
					alert = a
				}
			}
			if alert == nil {
				t.Fatalf("no field alert after %d secondary answers: %+v", found, rep)
			}
			t.Logf("found after %d secondary answers: %+v", found, *alert)
			if alert.Pool != "pool" || alert.Deployment != "secondary" || alert.Primary != "primary" || alert.Direction != "lower" ||
				alert.Ejected != eject || alert.PrimaryRate != 1 || alert.DeploymentRate >= 0.7 {
				t.Errorf("alert %+v", *alert)
			}
			sec := findDep(rep, "secondary")
			if f := fieldRate(sec, "effective_date"); f < 0 || f > 0.7 {
				t.Errorf("secondary's effective_date rate %v, want about 0.3", f)
			}
			if s := signal(findDep(rep, "primary"), "json_valid"); s.Answers < 60 || s.Rate != 1 {
				t.Errorf("primary json_valid %+v", s)
			}
			_, scrape := adminGet(t, h, "/metrics", adminKey)
			for _, want := range []string{
				`spillway_quality_alerts_total{deployment="secondary",pool="pool",signal="field_populated"} 1`,
				`spillway_quality_field_answers_total{deployment="primary",field="effective_date"} 60`,
				`spillway_quality_signal_events_total{deployment="primary",signal="json_valid"} 60`,
				map[bool]string{false: `spillway_quality_ejected{deployment="secondary",pool="pool"} 0`, true: `spillway_quality_ejected{deployment="secondary",pool="pool"} 1`}[eject],
			} {
				if !strings.Contains(scrape, want) {
					t.Errorf("metrics lack %s", want)
				}
			}
			if !strings.Contains(h.logs.String(), `"msg":"quality divergence"`) || !strings.Contains(h.logs.String(), `"field":"effective_date"`) {
				t.Error("no quality divergence log line")
			}
			rung := explainRung(t, h, "secondary")
			if eject != (rung.Reason == "quality_diverged") || eject == rung.Kept {
				t.Fatalf("explain's secondary rung %+v with eject %v", rung, eject)
			}
			// Clear: unknown pairs are refused, the pair's alerts end and
			// the secondary is eligible again.
			if code, body := clearQuality(t, h, "pool", "primary"); code != http.StatusNotFound {
				t.Errorf("clearing the primary: %d %s", code, body)
			}
			if code, body := clearQuality(t, h, "pool", "secondary"); code != http.StatusOK || !strings.Contains(body, `"cleared":`) {
				t.Fatalf("clear: %d %s", code, body)
			}
			if rep := qualityReport(t, h); len(rep.Alerts) != 0 {
				t.Fatalf("alerts after clear: %+v", rep.Alerts)
			}
			if rung := explainRung(t, h, "secondary"); rung.Reason == "quality_diverged" {
				t.Fatalf("still ejected after clear: %+v", rung)
			}
			h.fault("secondary", "")
			if r := h.do(t, extractionBody(false)); r.status != http.StatusOK || r.header.Get("X-Spillway-Deployment") != "secondary" {
				t.Fatalf("after clear: %d from %q", r.status, r.header.Get("X-Spillway-Deployment"))
			}
		})
	}
}

func findDep(rep quality.Report, id string) quality.DeploymentReport {
	for _, d := range rep.Deployments {
		if d.Deployment == id {
			return d
		}
	}
	return quality.DeploymentReport{}
}

func fieldRate(d quality.DeploymentReport, path string) float64 {
	for _, f := range d.Fields {
		if f.Path == path {
			return f.Rate
		}
	}
	return -1
}

func signal(d quality.DeploymentReport, name string) quality.SignalReport {
	for _, s := range d.Signals {
		if s.Signal == name {
			return s
		}
	}
	return quality.SignalReport{}
}

// Every caller dialect and provider, streamed and not, feeds the same
// signals: an Anthropic Messages caller's output_config.format, an OpenAI
// Responses caller's text.format and a Chat caller's response_format,
// served by Gemini, Anthropic and Bedrock mocks, all count as valid,
// conforming JSON with their field populated.
func TestQualitySignalsEveryDialect(t *testing.T) {
	schema := `{"type":"object","properties":{"effective_date":{"type":"string"}},"required":["effective_date"],"additionalProperties":false}`
	bodies := []struct{ path, body string }{
		{"/v1/messages", `{"model":"` + publicModel + `","max_tokens":256,"messages":[{"role":"user","content":"x"}],"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}` + `,"stream":%s}`},
		{"/v1/responses", `{"model":"` + publicModel + `","max_output_tokens":256,"input":"x","text":{"format":{"type":"json_schema","name":"p","schema":` + schema + `}},"stream":%s}`},
		{"/v1/chat/completions", `{"model":"` + publicModel + `","max_tokens":256,"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":` + schema + `}},"stream":%s}`},
	}
	for _, kind := range []string{"gemini", "anthropic", "bedrock"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t, rungSpec{"only", kind})
			n := 0
			for _, b := range bodies {
				for _, stream := range []string{"false", "true"} {
					resp, err := h.post(b.path, strings.Replace(b.body, "%s", stream, 1), "Anthropic-Version", "2023-06-01")
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%s stream=%s: %d %s", b.path, stream, resp.StatusCode, body)
					}
					n++
				}
			}
			d := findDep(qualityReport(t, h), "only")
			for _, name := range []string{"json_valid", "schema_valid"} {
				if s := signal(d, name); s.Answers != int64(n) || s.Rate != 1 {
					t.Errorf("%s: %+v, want %d answers all valid", name, s, n)
				}
			}
			if f := fieldRate(d, "effective_date"); f != 1 {
				t.Errorf("effective_date rate %v, want 1 (fields %+v)", f, d.Fields)
			}
		})
	}
}
