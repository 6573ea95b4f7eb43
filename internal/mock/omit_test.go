package mock

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOmitField(t *testing.T) {
	for _, bad := range []string{"omit_field", "omit_field=a;status=500", "omit_field=a;stall", "omit_field=" + strings.Repeat("x", 129)} {
		if _, err := ParseScript(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	sc, err := ParseScript("omit_field=effective_date;p=0.25")
	if err != nil || sc.String() != "omit_field=effective_date;p=0.25" {
		t.Fatalf("%v %v", sc, err)
	}
	count := func(seed int64) (omitted int) {
		m, err := New("openai", Options{Name: "sec", Seed: seed, Fault: "omit_field=effective_date;p=0.25"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m)
		defer srv.Close()
		body := `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":` +
			`{"type":"object","properties":{"insured":{"type":"string"},"effective_date":{"type":"string"}},"required":["insured","effective_date"]}}}}`
		for range 200 {
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			var obj map[string]any
			if err := json.Unmarshal([]byte(out.Choices[0].Message.Content), &obj); err != nil {
				t.Fatalf("answer not JSON: %q", out.Choices[0].Message.Content)
			}
			if _, ok := obj["insured"]; !ok {
				t.Fatalf("other field dropped: %v", obj)
			}
			if _, ok := obj["effective_date"]; !ok {
				omitted++
			}
		}
		return omitted
	}
	a, b := count(7), count(7)
	if a != b || a < 25 || a > 75 {
		t.Fatalf("omitted %d and %d of 200 with one seed, want the same, about 50", a, b)
	}
}
