package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/drill"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger/postgres"
	"github.com/spillway-gw/spillway/internal/replica"
)

// The variables the drill's replicas read their DSN and Redis URL from
// (set for the replica processes only).
const (
	drillDSNEnv   = "SPILLWAY_DRILL_LEDGER_DSN"
	drillRedisEnv = "SPILLWAY_DRILL_REDIS_URL"
)

// The backends --replicas uses when its flags are unset: those the test
// suite runs against (.ci/run starts them).
const (
	testPostgresEnv = "SPILLWAY_TEST_POSTGRES"
	testRedisEnv    = "SPILLWAY_TEST_REDIS"
)

// maxDrillReplicas bounds --replicas.
const maxDrillReplicas = 16

// replicaStopGrace is how long a replica has to drain and write its
// journal into the ledger when the drill ends.
const replicaStopGrace = 30 * time.Second

// replicaFlags are the drill's --replicas mode.
type replicaFlags struct {
	n                    *int
	bin, postgres, redis *string
}

func (rf *replicaFlags) register(fs *flag.FlagSet) {
	rf.n = fs.Int("replicas", 0, fmt.Sprintf("run N gateway processes (1-%d) of the spillway binary on a shared PostgreSQL ledger and Redis, requests spread over them round robin, instead of one gateway in process", maxDrillReplicas))
	rf.bin = fs.String("bin", "", "with --replicas: the spillway binary the replicas run (default: this one)")
	rf.postgres = fs.String("postgres", "", "with --replicas: DSN of a PostgreSQL database the drill may use (default $"+testPostgresEnv+"); it works in a schema of its own, dropped afterwards")
	rf.redis = fs.String("redis", "", "with --replicas: Redis URL (default $"+testRedisEnv+"); the drill's keys live under a prefix of its own")
}

// drillReplicas runs the drill against n replicas of the gateway, each a
// `spillway serve` process with its own journal, all on one PostgreSQL
// ledger and one Redis: the mocks run here, the drill spreads its
// requests over the replicas (each idempotent retry to another replica),
// stops them all (each drains and writes its journal into the ledger) and
// checks the shared ledger.
func drillReplicas(ctx context.Context, cfg drill.Config, rf replicaFlags, logPath string, stdout io.Writer) (*drill.Report, error) {
	n := *rf.n
	if n < 1 || n > maxDrillReplicas {
		return nil, fmt.Errorf("--replicas %d: want 1 to %d", n, maxDrillReplicas)
	}
	dsn := cmp.Or(*rf.postgres, os.Getenv(testPostgresEnv))
	redisURL := cmp.Or(*rf.redis, os.Getenv(testRedisEnv))
	if dsn == "" || redisURL == "" {
		return nil, fmt.Errorf("--replicas needs a PostgreSQL DSN (--postgres or $%s) and a Redis URL (--redis or $%s); .ci/postgres and .ci/redis start throwaway ones", testPostgresEnv, testRedisEnv)
	}
	bin := *rf.bin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--replicas: finding this binary: %w (give --bin)", err)
		}
		bin = exe
	}
	rs := drillRungs()
	mocks, addrs, stopMocks, err := drillMocks(rs, cfg.Seed)
	if err != nil {
		return nil, err
	}
	defer stopMocks()
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	schema := "spillway_drill_" + nonce
	schemaDSN, dropSchema, err := freshSchema(ctx, dsn, schema)
	if err != nil {
		return nil, err
	}
	defer dropSchema()
	store, err := postgres.Open(ctx, schemaDSN, postgres.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the drill's ledger (%s): %w", postgres.Redact(dsn), err)
	}
	defer store.Close()
	secret, _, err := keys.New(ctx, store, "drill", "drill", nil, time.Now())
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "spillway-drill-replicas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	prefix := "drill-" + nonce
	// Redis gets a second per call (shared_state.timeout, default 50ms):
	// on a loaded CI machine a slower answer would send a replica to its
	// local fallbacks (by design) and refuse its keyed requests (503
	// idempotency_unavailable, shared_state.idempotency_when_down refuse);
	// the drill reports any fallback.
	head := fmt.Sprintf("ledger:\n  driver: postgres\n  dsn_env: %s\n  path: ledger\nshared_state:\n  driver: redis\n  url_env: %s\n  key_prefix: %s\n  timeout: 1s\n",
		drillDSNEnv, drillRedisEnv, prefix)
	cfgPath := filepath.Join(dir, "drill.yaml")
	if err := os.WriteFile(cfgPath, []byte(drillConfig(rs, addrs, head)), 0o644); err != nil {
		return nil, err
	}
	snap, err := catalog.LoadSnapshot(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("the drill's config: %w", err)
	}
	replicaDSN, err := withParam(schemaDSN, "pool_max_conns", replicaPoolConns)
	if err != nil {
		return nil, err
	}
	ps, err := startReplicas(ctx, n, replica.Options{Bin: bin, Config: cfgPath,
		Env: []string{drillDSNEnv + "=" + replicaDSN, drillRedisEnv + "=" + redisURL}}, dir, logPath)
	defer replica.StopAll(ps, replicaStopGrace)
	if err != nil {
		return nil, err
	}
	urls := make([]string, n)
	for i, p := range ps {
		urls[i] = p.URL
	}
	fmt.Fprintf(stdout, "%d replicas (%s serve, pids %s) on PostgreSQL %s (schema %s) and Redis %s (prefix %s)\n",
		n, bin, pids(ps), postgres.Redact(dsn), schema, redactURL(redisURL), prefix)
	t := drill.Target{BaseURL: urls[0], BaseURLs: urls, Key: secret, Model: drillModel, Ledger: store,
		Flush: func(ctx context.Context) error {
			fmt.Fprintf(stdout, "shared state (Redis) per replica: %s\n", sharedStateCounts(ctx, ps))
			return replica.StopAll(ps, replicaStopGrace)
		}}
	return runOnRungs(ctx, t, cfg, snap, rs, mocks)
}

// startReplicas starts n replicas, each with its own data directory under
// dir (its journal) and, with logPath, its log in logPath.N. On an error
// the replicas already started are returned too, to be stopped.
func startReplicas(ctx context.Context, n int, o replica.Options, dir, logPath string) ([]*replica.Process, error) {
	var ps []*replica.Process
	for i := range n {
		ro := o
		ro.DataDir = filepath.Join(dir, fmt.Sprintf("replica-%d", i))
		if err := os.MkdirAll(ro.DataDir, 0o700); err != nil {
			return ps, err
		}
		if logPath != "" {
			f, err := os.Create(fmt.Sprintf("%s.%d", logPath, i))
			if err != nil {
				return ps, err
			}
			defer f.Close() // the child holds its own descriptor
			ro.Log = f
		}
		p, err := replica.Start(ctx, ro)
		if err != nil {
			return ps, fmt.Errorf("replica %d: %w", i, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// sharedStateCounts reads each replica's shared-state counters from its
// /metrics (open to loopback by default): calls to Redis that failed and
// calls answered locally because it was down.
func sharedStateCounts(ctx context.Context, ps []*replica.Process) string {
	var out []string
	for i, p := range ps {
		m, err := scrape(ctx, p.URL+"/metrics", "spillway_shared_state_up", "spillway_shared_state_errors_total", "spillway_shared_state_fallbacks_total")
		if err != nil {
			out = append(out, fmt.Sprintf("#%d: %v", i, err))
			continue
		}
		out = append(out, fmt.Sprintf("#%d up %s, %s errors, %s fallbacks", i, m[0], m[1], m[2]))
	}
	return strings.Join(out, "; ")
}

// scrape reads the values of the named unlabelled metrics ("?" when
// absent).
func scrape(ctx context.Context, url string, names ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = "?"
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				out[i] = v
			}
		}
	}
	return out, nil
}

func pids(ps []*replica.Process) string {
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(p.Pid()))
	}
	return strings.Join(s, ",")
}

// redactURL hides a URL's password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// freshSchema makes an empty schema in the database dsn names and returns
// a DSN whose connections use it, and a function that drops it.
func freshSchema(ctx context.Context, dsn, name string) (string, func(), error) {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("connecting to PostgreSQL (%s): %w", postgres.Redact(dsn), err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("creating schema %s: %w", name, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(dctx, dsn); err == nil {
			_, _ = c.Exec(dctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
			_ = c.Close(dctx)
		}
	}
	out, err := withParam(dsn, "search_path", name)
	if err != nil {
		drop()
		return "", nil, err
	}
	return out, drop, nil
}

// withParam sets a parameter in a DSN, URL or key=value form.
func withParam(dsn, name, value string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " " + name + "=" + value, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errors.New("the PostgreSQL DSN is not a valid URL")
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// replicaPoolConns bounds each drill replica's PostgreSQL connections, so
// that replicas, the drill and the other tests fit in a small test
// cluster's max_connections.
const replicaPoolConns = "4"
