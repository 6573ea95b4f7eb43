package catalog

import (
	"strings"
	"testing"
	"time"
)

// Unhappy paths first: every way a shared_state block is refused, each
// naming its field and line (the routeopts base config is 14 lines).
func TestSharedStateRefusals(t *testing.T) {
	tests := []struct {
		name, block string
		wants       []want
	}{
		{"unknown driver", "shared_state: {driver: memcached}\n", []want{{14, "shared_state.driver", `"memcached" is not none or redis`}}},
		{"url written in the file", "shared_state: {driver: redis, url_env: \"redis://:pw@r:6379/0\"}\n",
			[]want{{14, "shared_state.url_env", "not an environment variable name"}}},
		{"prefix with a space", "shared_state: {driver: redis, key_prefix: \"my gw\"}\n", []want{{14, "shared_state.key_prefix", "lower-case"}}},
		{"timeout too long", "shared_state: {driver: redis, timeout: 10s}\n", []want{{14, "shared_state.timeout", "outside 1ms..5s"}}},
		{"timeout below a millisecond", "shared_state: {driver: redis, timeout: 10us}\n", []want{{14, "shared_state.timeout", "outside 1ms..5s"}}},
		{"retry too often", "shared_state: {driver: redis, retry_every: 1ms}\n", []want{{14, "shared_state.retry_every", "outside 10ms..1m"}}},
		{"lease too short", "shared_state: {driver: redis, probe_lease: 100ms}\n", []want{{14, "shared_state.probe_lease", "outside 1s..10m"}}},
		{"unknown budget policy", "shared_state: {driver: redis, budgets_when_down: open}\n", []want{{14, "shared_state.budgets_when_down", `"open" is not refuse or allowance`}}},
		{"unknown idempotency policy", "shared_state: {driver: redis, idempotency_when_down: allow}\n", []want{{14, "shared_state.idempotency_when_down", `"allow" is not refuse or local`}}},
		{"idempotency policy on its own line", "shared_state:\n  driver: redis\n  idempotency_when_down: open\n", []want{{16, "shared_state.idempotency_when_down", `"open" is not refuse or local`}}},
		{"allowance above one", "shared_state: {driver: redis, budgets_when_down: allowance, down_allowance: 2}\n", []want{{14, "shared_state.down_allowance", "outside 0..1"}}},
		{"unknown key", "shared_state: {driver: redis, url: x}\n", []want{{14, "shared_state.url", "unknown"}}},
		{"line of a nested field", "shared_state:\n  driver: redis\n  timeout: 1h\n", []want{{16, "shared_state.timeout", "outside 1ms..5s"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, optsBase+tc.block), tc.wants...)
		})
	}
}

// None by default, and none shows nothing in the served config; redis gets
// its defaults.
func TestSharedStateDefaults(t *testing.T) {
	c, err := Parse([]byte(optsBase), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.SharedState; s.On() || s != (SharedState{}) {
		t.Errorf("shared_state unset: %+v, want none and zero", s)
	}
	c, err = Parse([]byte(optsBase+"shared_state: {driver: redis}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := SharedState{Driver: "redis", URLEnv: "SPILLWAY_REDIS_URL", KeyPrefix: "spillway",
		Timeout: Duration(50 * time.Millisecond), RetryEvery: Duration(time.Second),
		ProbeLease: Duration(30 * time.Second), BudgetsWhenDown: "refuse", IdempotencyWhenDown: "refuse"}
	if c.SharedState != want {
		t.Errorf("redis defaults: %+v, want %+v", c.SharedState, want)
	}
	c, err = Parse([]byte(optsBase+"shared_state: {driver: redis, budgets_when_down: allowance}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a := c.SharedState.DownAllowance; a != DefaultSharedDownAllowance {
		t.Errorf("allowance default %v, want %v", a, DefaultSharedDownAllowance)
	}
	c, err = Parse([]byte(optsBase+"shared_state: {driver: redis, idempotency_when_down: local}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.SharedState.IdempotencyWhenDown; p != IdempotencyDownLocal {
		t.Errorf("idempotency_when_down local read as %q", p)
	}
}

// Settings that do nothing are allowed, with a warning.
func TestSharedStateWarnings(t *testing.T) {
	c, errs, warns := Check([]byte(optsBase+"shared_state: {url_env: REDIS_URL}\n"), "w.yaml")
	if len(errs) != 0 || c == nil {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns, want{14, "shared_state", "the driver is none"})
	_, errs, warns = Check([]byte(optsBase+"shared_state: {driver: redis, down_allowance: 0.2}\n"), "w.yaml")
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns, want{14, "shared_state.down_allowance", "budgets_when_down is refuse"})
	_, errs, warns = Check([]byte(optsBase+"shared_state: {idempotency_when_down: local}\n"), "w.yaml")
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns, want{14, "shared_state", "the driver is none"})
}

// An unset or empty URL variable is named on its line; none needs none.
func TestSharedStateURL(t *testing.T) {
	c, err := Parse([]byte(optsBase+"shared_state:\n  driver: redis\n  url_env: GW_REDIS\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	look := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if _, ps := c.SharedStateURL("s.yaml", look); ps.Err() == nil || ps[0].Line != 16 || !strings.Contains(ps[0].Msg, "GW_REDIS") {
		t.Errorf("unset: %v", ps)
	}
	env["GW_REDIS"] = ""
	if _, ps := c.SharedStateURL("s.yaml", look); ps.Err() == nil {
		t.Error("empty: no problem")
	}
	env["GW_REDIS"] = "redis://r:6379/0"
	if u, ps := c.SharedStateURL("s.yaml", look); ps.Err() != nil || u != "redis://r:6379/0" {
		t.Errorf("set: %q %v", u, ps)
	}
	none, _ := Parse([]byte(optsBase), "s.yaml")
	if u, ps := none.SharedStateURL("s.yaml", look); u != "" || ps != nil {
		t.Errorf("none: %q %v", u, ps)
	}
}

// Every shared_state setting is read once, when serve connects to Redis: a
// reload that changes one must say it waits for a restart, or an operator
// who switches idempotency_when_down from local to refuse believes keyed
// retries are protected while this replica still runs them twice.
func TestSharedStateIsRestartOnly(t *testing.T) {
	tests := []struct {
		name string
		set  func(s *SharedState)
		want string
	}{
		{"driver", func(s *SharedState) { s.Driver = SharedRedis }, "shared_state.driver (none → redis)"},
		{"url_env", func(s *SharedState) { s.URLEnv = "OTHER_URL" }, "shared_state.url_env (SPILLWAY_REDIS_URL → OTHER_URL)"},
		{"key_prefix", func(s *SharedState) { s.KeyPrefix = "b:" }, "shared_state.key_prefix (a: → b:)"},
		{"timeout", func(s *SharedState) { s.Timeout = Duration(time.Second) }, "shared_state.timeout (50ms → 1s)"},
		{"retry_every", func(s *SharedState) { s.RetryEvery = Duration(2 * time.Second) }, "shared_state.retry_every (1s → 2s)"},
		{"probe_lease", func(s *SharedState) { s.ProbeLease = Duration(time.Minute) }, "shared_state.probe_lease (30s → 1m0s)"},
		{"budgets_when_down", func(s *SharedState) { s.BudgetsWhenDown = BudgetsDownAllowance }, "shared_state.budgets_when_down (refuse → allowance)"},
		{"down_allowance", func(s *SharedState) { s.DownAllowance = 0.2 }, "shared_state.down_allowance (0 → 0.2)"},
		{"idempotency_when_down", func(s *SharedState) { s.IdempotencyWhenDown = IdempotencyDownLocal }, "shared_state.idempotency_when_down (refuse → local)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			boot := &Config{SharedState: SharedState{Driver: SharedNone, URLEnv: "SPILLWAY_REDIS_URL", KeyPrefix: "a:",
				Timeout: Duration(50 * time.Millisecond), RetryEvery: Duration(time.Second), ProbeLease: Duration(30 * time.Second),
				BudgetsWhenDown: BudgetsDownRefuse, IdempotencyWhenDown: IdempotencyDownRefuse}}
			now := *boot
			tc.set(&now.SharedState)
			if got := RestartOnly(boot, &now); len(got) != 1 || got[0] != tc.want {
				t.Errorf("RestartOnly = %q, want [%q]", got, tc.want)
			}
		})
	}
}
