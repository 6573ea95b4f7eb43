package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

func explain(t *testing.T, h *harness, method, query, body string) server.Explanation {
	t.Helper()
	req, _ := http.NewRequest(method, h.gw.URL+"/v1/admin/explain"+query, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("explain: %s", resp.Status)
	}
	var ex server.Explanation
	if err := json.NewDecoder(resp.Body).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

func rungsOf(ex server.Explanation) string {
	var b []string
	for _, r := range ex.Rungs {
		s := r.Deployment + ":"
		if r.Kept {
			s += "kept"
		} else {
			s += r.Reason
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

func TestRouteExplain(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Deployments[1].Price = nil // unpriced: never routed at $0
	}, rungSpec{"primary", "openai"}, rungSpec{"unpriced", "anthropic"}, rungSpec{"third", "openai"})
	ex := explain(t, h, http.MethodGet, "?model="+publicModel, "")
	if got := rungsOf(ex); got != "primary:kept unpriced:price_unknown third:kept" {
		t.Errorf("rungs = %q", got)
	}
	if strings.Join(ex.Order, ",") != "primary,third" || ex.ExactModel != exactModel || ex.Pool != "pool" {
		t.Errorf("explanation = %+v", ex)
	}
	// A credential failure suppresses the primary; explain says so.
	h.fault("primary", "status=401")
	served(t, h, false)
	ex = explain(t, h, http.MethodPost, "", `{"model":"`+publicModel+`","messages":[{"role":"user","content":"hi"}]}`)
	if got := rungsOf(ex); got != "primary:suppressed unpriced:price_unknown third:kept" {
		t.Errorf("after a 401: rungs = %q", got)
	}
	if ex.Rungs[0].Health != "suppressed" {
		t.Errorf("health = %q", ex.Rungs[0].Health)
	}
	// Every healthy rung down: explain names the last-resort rung.
	h.fault("third", "status=401")
	chat(t, h, false, hello()) // primary suppressed, third fails: nobody serves
	ex = explain(t, h, http.MethodGet, "?model="+publicModel, "")
	if len(ex.Order) != 0 || ex.LastResort == "" {
		t.Errorf("explanation = %+v, want no order and a last-resort rung", ex)
	}
}
