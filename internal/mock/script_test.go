package mock

import (
	"reflect"
	"strings"
	"testing"
)

var badScripts = []struct {
	script, want string
}{
	{"bogus", `unknown item "bogus"`},
	{"bogus=1", `unknown item "bogus"`},
	{"=1", `unknown item ""`},
	{"status", "status needs a value"},
	{"status=", "status needs a value"},
	{"status=abc", "want an integer in [400, 599]"},
	{"status=200", "want an integer in [400, 599]"},
	{"status=600", "want an integer in [400, 599]"},
	{"status=429;status=500", `"status" given twice`},
	{"stall=1", "stall is a flag and takes no value"},
	{"no_terminal=yes", "no_terminal is a flag"},
	{"refusal=", "refusal is a flag"},
	{"delay=5", "want a non-negative Go duration"},
	{"delay=-1s", "want a non-negative Go duration"},
	{"event_delay=soon", "want a non-negative Go duration"},
	{"die_after=-1", "want an integer in [0,"},
	{"die_after=2;error_after=3", "die_after and error_after exclude each other"},
	{"stall_after=1;malformed_after=1", "exclude each other"},
	{"status=500;stall", "status and stall exclude each other"},
	{"status=500;die_after=1", "needs a successful stream"},
	{"stall;error_after=0", "needs a successful stream"},
	{"status=529;no_terminal", "need a successful answer"},
	{"stall;refusal", "need a successful answer"},
	{"error_type=overloaded_error", "error_type needs status= or error_after="},
	{"message=hello", "message needs status= or error_after="},
	{"error_code=insufficient_quota", "error_code needs status="},
	{"retry_after=2", "retry_after needs status="},
	{"retry_after_ms=200;die_after=1", "retry_after needs status="},
	{"status=429;retry_after=1.5", "want an integer"},
	{"status=429;error_type=has space", "want letters, digits"},
	{"p=1.5;status=500", "want a probability in [0, 1]"},
	{"p=-0.1;status=500", "want a probability"},
	{"p=NaN;status=500", "want a probability"},
	{"times=0;status=500", "want an integer in [1,"},
	{"tokens=-1", "want an integer in [0, 100000]"},
	{"tokens=100001", "want an integer in [0, 100000]"},
	{"tools=0", "want an integer in [1, 16]"},
	{"tools=17", "want an integer in [1, 16]"},
	{"tool=get weather", "want a-z"},
	{"tool=" + strings.Repeat("x", 65), "longer than 64 bytes"},
	{"args=[1,2]", "want a JSON object"},
	{`args={"city":`, "want a JSON object"},
	{"cached=x", "want an integer"},
}

func TestParseScriptRejects(t *testing.T) {
	for _, tc := range badScripts {
		t.Run(tc.script, func(t *testing.T) {
			sc, err := ParseScript(tc.script)
			if err == nil {
				t.Fatalf("ParseScript(%q) = %v, want error", tc.script, sc)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "mock script: ") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

var goodScripts = []struct {
	script, canonical string
}{
	{"", ""},
	{" ; ;", ""},
	{"status=529", "status=529"},
	{" status = 429 ; retry_after = 2 ", "status=429;retry_after=2"},
	{"p=0.38;status=529", "status=529;p=0.38"},
	{"die_after=3", "die_after=3"},
	{"status=429;error_code=insufficient_quota", "status=429;error_code=insufficient_quota"},
	{"status=400;error_type=invalid_request_error;message=Your credit balance is too low to access the Anthropic API.",
		"status=400;error_type=invalid_request_error;message=Your credit balance is too low to access the Anthropic API."},
	{"message=a=b;status=500", "status=500;message=a=b"},
	{"status=429;retry_after_ms=1500", "status=429;retry_after_ms=1500"},
	{"delay=250ms;stall", "delay=250ms;stall"},
	{"stall_after=0", "stall_after=0"},
	{"error_after=2;error_type=api_error;message=boom", "error_type=api_error;message=boom;error_after=2"},
	{"malformed_after=1;event_delay=1ms", "malformed_after=1;event_delay=1ms"},
	{"no_terminal;refusal;message=No.", "message=No.;no_terminal;refusal"},
	{"tokens=0;cached=12;tool=get_weather;tools=2", "tokens=0;cached=12;tool=get_weather;tools=2"},
	{`args={ "city" : "Lyon" }`, `args={"city":"Lyon"}`},
	{"times=3;status=503", "status=503;times=3"},
	{"p=1;status=500", "status=500"},
	{"p=0;status=500", "status=500;p=0"},
}

func TestParseScriptAccepts(t *testing.T) {
	for _, tc := range goodScripts {
		t.Run(tc.script, func(t *testing.T) {
			sc, err := ParseScript(tc.script)
			if err != nil {
				t.Fatalf("ParseScript(%q): %v", tc.script, err)
			}
			if got := sc.String(); got != tc.canonical {
				t.Errorf("String() = %q, want %q", got, tc.canonical)
			}
			again, err := ParseScript(sc.String())
			if err != nil || !reflect.DeepEqual(again, sc) {
				t.Errorf("round trip of %q: %+v, %v; want %+v", sc.String(), again, err, sc)
			}
		})
	}
}

// The wire format may reject items it cannot express, at New, SetFault,
// PUT /_mock/fault and in the per-request header alike.
func TestScriptCheckedByKind(t *testing.T) {
	if _, err := New("anthropic", Options{Fault: "status=429;error_code=insufficient_quota"}); err == nil ||
		!strings.Contains(err.Error(), "anthropic errors have no code") {
		t.Errorf("anthropic with error_code: %v", err)
	}
	if _, err := New("openai", Options{Fault: "status=429;error_code=insufficient_quota"}); err != nil {
		t.Errorf("openai with error_code: %v", err)
	}
	if _, err := New("cohere", Options{}); err == nil {
		t.Error("unknown kind accepted")
	}
	m, err := New("openai", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetFault("status=9"); err == nil {
		t.Error("SetFault accepted a bad script")
	}
	if _, err := New("openai", Options{Fault: "stall;status=500"}); err == nil {
		t.Error("New accepted a bad default fault")
	}
}

func FuzzParseScript(f *testing.F) {
	for _, tc := range badScripts {
		f.Add(tc.script)
	}
	for _, tc := range goodScripts {
		f.Add(tc.script)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseScript(s)
		if err != nil || sc == nil {
			return
		}
		// Whatever parses renders canonically and parses back to the same
		// script, so the canonical form is a faithful description.
		again, err := ParseScript(sc.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", sc.String(), s, err)
		}
		if !reflect.DeepEqual(again, sc) {
			t.Fatalf("round trip of %q via %q: %+v != %+v", s, sc.String(), again, sc)
		}
		if sc.after != afterNone && sc.status != 0 {
			t.Fatalf("%q: status with a stream fault", s)
		}
	})
}
