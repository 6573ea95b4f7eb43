package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/mock"
)

// pgTestEnv names the database the PostgreSQL tests may fill (.ci/run
// starts one: .ci/postgres). Unset, they skip; set, it must answer.
const pgTestEnv = "SPILLWAY_TEST_POSTGRES"

// pgSchema makes an empty schema in the test database and returns a DSN
// whose connections use it; it is dropped when the test ends.
func pgSchema(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(pgTestEnv)
	if dsn == "" {
		t.Skipf("%s is unset: this test needs PostgreSQL (.ci/run starts one with .ci/postgres)", pgTestEnv)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s is set but the database does not answer: %v", pgTestEnv, err)
	}
	defer c.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
			c.Close(ctx)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	// A generous connect timeout: SCRAM authentication is CPU work, slow
	// on a CI machine whose cores are busy.
	if !strings.HasPrefix(dsn, "postgres") {
		return dsn + " search_path=" + name + " connect_timeout=20"
	}
	return dsn + sep + "search_path=" + name + "&connect_timeout=20"
}

func pgGatewayConfig(t *testing.T, journal string) *catalog.Snapshot {
	t.Helper()
	cfg, err := catalog.Parse([]byte(`ledger: {driver: postgres, dsn_env: SPILLWAY_TEST_LEDGER_DSN, path: `+journal+`}
deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestPostgresLedgerGateway: two gateways on one PostgreSQL ledger. The
// first creates the keys there (migrating the schema); the second finds
// them; a request through the first is one row in the database once its
// journal is ingested; no start-up line shows the DSN's password.
func TestPostgresLedgerGateway(t *testing.T) {
	dsn := pgSchema(t)
	t.Setenv("SPILLWAY_TEST_LEDGER_DSN", dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	var out1, out2 bytes.Buffer
	g1, err := openGateway(ctx, catalog.NewHolder(pgGatewayConfig(t, filepath.Join(dir, "a"))), slog.New(slog.DiscardHandler), &out1)
	if err != nil {
		t.Fatalf("first gateway: %v", err)
	}
	g2, err := openGateway(ctx, catalog.NewHolder(pgGatewayConfig(t, filepath.Join(dir, "b"))), slog.New(slog.DiscardHandler), &out2)
	if err != nil {
		t.Fatalf("second gateway: %v", err)
	}
	if !strings.Contains(out1.String(), "no virtual keys yet") || strings.Contains(out1.String(), "created a new, empty ledger") {
		t.Errorf("first start-up said:\n%s\nwant a key created, no ledger file", out1.String())
	}
	if strings.Contains(out2.String(), "no virtual keys yet") || strings.Contains(out2.String(), "no admin key yet") {
		t.Errorf("second start-up said:\n%s\nwant the first's keys found in the shared ledger", out2.String())
	}
	pw := ""
	if cfg, err := pgx.ParseConfig(dsn); err == nil {
		pw = cfg.Password
	}
	for _, d := range []string{g1.ledgerDesc, g2.ledgerDesc, out1.String(), out2.String()} {
		if pw != "" && strings.Contains(d, pw) {
			t.Errorf("the DSN's password is shown: %q", d)
		}
	}
	if !strings.HasPrefix(g1.ledgerDesc, "postgres ") {
		t.Errorf("ledger described as %q", g1.ledgerDesc)
	}
	secret := regexp.MustCompile(`(?m)^  (sk-spw-\S+)$`).FindStringSubmatch(out1.String())
	if secret == nil {
		t.Fatalf("no key secret in:\n%s", out1.String())
	}
	// Through the second gateway, with the first's key: the deployment
	// refuses connections, so the request fails, and is recorded.
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`))
	req.Header.Set("Authorization", "Bearer "+secret[1])
	rec := httptest.NewRecorder()
	g2.ServeHTTP(rec, req)
	if rec.Code == http.StatusUnauthorized || rec.Code < 400 {
		t.Fatalf("request through the second gateway: %d %s", rec.Code, rec.Body)
	}
	for _, g := range []*gateway{g1, g2} {
		if err := g.close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n, keys int
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM requests`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM keys`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if n != 1 || keys != 1 {
		t.Errorf("the database holds %d requests and %d keys, want 1 and 1", n, keys)
	}
}

// TestPostgresLedgerConfigErrors: an unset DSN variable is named with the
// config's line; an unreachable database is reported without the DSN's
// password. Neither needs a database.
func TestPostgresLedgerConfigErrors(t *testing.T) {
	ctx := context.Background()
	snap := pgGatewayConfig(t, filepath.Join(t.TempDir(), "j"))
	t.Setenv("SPILLWAY_TEST_LEDGER_DSN", "")
	os.Unsetenv("SPILLWAY_TEST_LEDGER_DSN")
	_, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "config:1: ledger.dsn_env") || !strings.Contains(err.Error(), "SPILLWAY_TEST_LEDGER_DSN") {
		t.Errorf("unset DSN variable: %v", err)
	}
	const canary = "pw-canary-91c"
	t.Setenv("SPILLWAY_TEST_LEDGER_DSN", "postgres://spw:"+canary+"@127.0.0.1:1/ledger?connect_timeout=2")
	_, err = openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), canary) || !strings.Contains(err.Error(), "spw:xxxxx@127.0.0.1:1") {
		t.Errorf("unreachable database: %v; want it named without its password", err)
	}
}

// TestPostgresLedgerCLI: with ledger.driver postgres in the config, the
// CLI's keys and usage commands work on the database; before any gateway
// made a ledger there, they refuse instead of creating an empty one.
func TestPostgresLedgerCLI(t *testing.T) {
	dsn := pgSchema(t)
	t.Setenv("SPILLWAY_TEST_LEDGER_DSN", dsn)
	ctx := context.Background()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "spillway.yaml")
	if err := os.WriteFile(cfgPath, []byte(`ledger: {driver: postgres, dsn_env: SPILLWAY_TEST_LEDGER_DSN}
deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runKeys(ctx, []string{"list", "--config", cfgPath}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "no spillway ledger in this database") {
		t.Fatalf("keys list before any gateway: %v, want no ledger", err)
	}
	g, err := openGateway(ctx, catalog.NewHolder(pgGatewayConfig(t, filepath.Join(dir, "j"))), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g.close(ctx)
	out.Reset()
	if err := runKeys(ctx, []string{"create", "--config", cfgPath, "--org", "acme", "--team", "search"}, &out, &out); err != nil {
		t.Fatalf("keys create: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runKeys(ctx, []string{"list", "--config", cfgPath}, &out, &out); err != nil || !strings.Contains(out.String(), "acme") {
		t.Fatalf("keys list: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runUsage(ctx, []string{"--config", cfgPath, "--format", "csv"}, &out, &out); err != nil {
		t.Fatalf("usage: %v\n%s", err, out.String())
	}
}

// TestCheckNamesTheLedgerDSNVariable: spillway check warns, on the
// ledger's line, when the PostgreSQL ledger's DSN variable is unset, and
// says nothing of it when it is set (never showing the DSN).
func TestCheckNamesTheLedgerDSNVariable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(`deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
ledger:
  driver: postgres
`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var out, errb bytes.Buffer
	checkWithEnv(context.Background(), []string{path}, &out, &errb, lookup)
	if !strings.Contains(out.String(), "c.yaml:5: ledger.dsn_env: environment variable SPILLWAY_LEDGER_DSN (the PostgreSQL ledger's DSN) is not set") {
		t.Errorf("check with the DSN unset said:\n%s%s", out.String(), errb.String())
	}
	env["SPILLWAY_LEDGER_DSN"] = "postgres://spw:s3cret@db/ledger"
	out.Reset()
	checkWithEnv(context.Background(), []string{path}, &out, &errb, lookup)
	if strings.Contains(out.String(), "dsn_env") || strings.Contains(out.String(), "s3cret") {
		t.Errorf("check with the DSN set said:\n%s", out.String())
	}
}

// pgProxy forwards connections to the test database until cut: then every
// open connection is dropped and new ones refused (PostgreSQL gone), until
// restored. It returns dsn pointed at the proxy.
type pgProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
}

func newPGProxy(t *testing.T, dsn string) (*pgProxy, string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, target: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			up, err := net.Dial("tcp", p.target)
			if down || err != nil {
				c.Close()
				if up != nil {
					up.Close()
				}
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
				wg.Go(func() {
					io.Copy(pair[0], pair[1])
					pair[0].Close()
					pair[1].Close()
				})
			}
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
	})
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	sep := " "
	if strings.HasPrefix(dsn, "postgres") {
		sep = "&"
		if !strings.Contains(dsn, "?") {
			sep = "?"
		}
		return p, dsn + sep + "host=" + host + "&port=" + port
	}
	return p, dsn + sep + "host=" + host + " port=" + port
}

func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *pgProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestPostgresOutageUnderLoad: a gateway on the PostgreSQL ledger keeps
// answering while the database is gone (every connection dropped, new
// ones refused) for most of a load, and stays ready; once the database is
// back, every answered request has exactly one row there.
func TestPostgresOutageUnderLoad(t *testing.T) {
	dsn := pgSchema(t)
	p, viaProxy := newPGProxy(t, dsn)
	t.Setenv("SPILLWAY_TEST_LEDGER_DSN", viaProxy)
	m, err := mock.New("openai", mock.Options{Name: "a", Fault: "tokens=5"})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(m)
	defer up.Close()
	cfg, err := catalog.Parse([]byte(`ledger: {driver: postgres, dsn_env: SPILLWAY_TEST_LEDGER_DSN, path: `+filepath.Join(t.TempDir(), "j")+`}
deployments:
  - {id: a, provider: openai, base_url: `+up.URL+`, model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 100}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	g, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), &out)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	secret := regexp.MustCompile(`(?m)^  (sk-spw-\S+)$`).FindStringSubmatch(out.String())
	if secret == nil {
		t.Fatalf("no key secret in:\n%s", out.String())
	}
	const workers, each = 8, 30
	var done atomic.Int64
	outage := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
					strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":20}`))
				req.Header.Set("Authorization", "Bearer "+secret[1])
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					t.Errorf("answer %d: %s", res.StatusCode, body)
				}
				if done.Add(1) == workers*each/3 {
					close(outage)
				}
			}
		})
	}
	<-outage
	p.cut()
	wg.Wait()
	// The ingester has met the outage (it ingests every 500ms) and holds
	// rows for the database.
	deadline := time.Now().Add(15 * time.Second)
	for g.writer.Stats().Retries == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := g.writer.Stats(); st.Retries == 0 || st.Pending == 0 {
		t.Fatalf("the database was cut, but the writer saw %d failed ingests with %d rows pending", st.Retries, st.Pending)
	}
	res, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("/readyz during the outage: %d, want 200 (the journal holds the rows)", res.StatusCode)
	}
	p.restore()
	closeCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if err := g.close(closeCtx); err != nil {
		t.Fatalf("close (ingesting what the journal held): %v", err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n, ok, attempts int
	if err := c.QueryRow(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'ok'), (SELECT COUNT(*) FROM attempts) FROM requests`).Scan(&n, &ok, &attempts); err != nil {
		t.Fatal(err)
	}
	if n != workers*each || ok != n || attempts != n {
		t.Errorf("after the outage: %d requests (%d ok) with %d attempts, want %d of each", n, ok, attempts, workers*each)
	}
}
