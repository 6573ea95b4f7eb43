package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Every admin answer is JSON in snake_case throughout: no Go field names.
func TestAdminJSONIsSnakeCase(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	served(t, h, false)
	do := func(method, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, h.gw.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return b
	}
	do(http.MethodPut, "/v1/admin/budgets", `{"scope":"team","id":"search","credit_usd":5,"rpm":10}`)
	for _, path := range []string{"/v1/admin/budgets", "/v1/admin/keys", "/v1/admin/health", "/v1/admin/config", "/v1/admin/quality",
		"/v1/admin/explain?model=" + publicModel, "/v1/usage?group_by=model,deployment",
		"/v1/admin/traffic", "/v1/admin/failures"} {
		var v any
		if err := json.Unmarshal(do(http.MethodGet, path, ""), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		walkKeys(v, path, func(at, key string) {
			if !snakeKey.MatchString(key) {
				t.Errorf("%s: key %q at %s is not snake_case", path, key, at)
			}
		})
	}
}

// walkKeys calls fn for every object key in v, except the keys of a
// usage row's "group" (values of the grouping, not field names).
func walkKeys(v any, at string, fn func(at, key string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			fn(at, k)
			if k == "group" {
				continue
			}
			walkKeys(e, at+"."+k, fn)
		}
	case []any:
		for _, e := range x {
			walkKeys(e, at+"[]", fn)
		}
	}
}
