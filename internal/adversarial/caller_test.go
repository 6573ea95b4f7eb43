package adversarial

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// callerAttacks: the providers are healthy; the callers are hostile or
// careless.
func (e *env) callerAttacks() []attack {
	return []attack{
		{"stalled_bodies", 10 * time.Second, 64 * mib, e.stalledBodies},
		{"trickled_body", 8 * time.Second, 64 * mib, e.trickledBody},
		{"non_reading_streams", 20 * time.Second, 64 * mib, e.nonReadingStreams},
		{"floods", 10 * time.Second, 100 * mib, e.floods},
		{"invalid_encodings", 5 * time.Second, 64 * mib, e.invalidEncodings},
	}
}

// dial opens a raw connection to the gateway.
func (g *gateway) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(g.addr, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stalledHead is a chat request's head announcing a body of 1000 bytes.
func (g *gateway) stalledHead() string {
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: spillway\r\nAuthorization: Bearer " + g.key +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
}

// outcome is how the gateway let a raw connection go.
type outcome struct {
	status string // "" when the connection was closed without an answer
	took   time.Duration
	err    error
}

// ok reports whether the gateway answered 408 or closed the connection.
func (o outcome) ok() bool {
	return o.status == "408 Request Timeout" || o.status == "" && isClosed(o.err)
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// await reads the gateway's answer on c, for at most 10s from start.
func await(c net.Conn, start time.Time) outcome {
	_ = c.SetReadDeadline(start.Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return outcome{took: time.Since(start), err: err}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return outcome{status: resp.Status, took: time.Since(start)}
}

// stalledBodies: 30 callers announce a body and never send it. Each gets
// 408 (or its connection closed) after body_timeout (2s), and /healthz
// stays fast meanwhile.
func (e *env) stalledBodies(t *testing.T) {
	const n = 30
	before := e.mocks["plain"].Count()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = e.g.dial(t)
		defer conns[i].Close()
	}
	start := time.Now()
	for _, c := range conns {
		if _, err := io.WriteString(c, e.g.stalledHead()); err != nil {
			t.Fatal(err)
		}
	}
	results := make([]outcome, n)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = await(c, start)
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var slowest time.Duration
	probes := 0
	for waiting := true; waiting; {
		select {
		case <-allDone:
			waiting = false
		case <-tick.C:
			r := e.g.do(t, http.MethodGet, "/healthz", "", "")
			probes++
			slowest = max(slowest, r.took)
			if r.status != http.StatusOK || r.took > 500*time.Millisecond {
				t.Errorf("/healthz while %d bodies stall: %s", n, r)
			}
		}
	}
	var first, last time.Duration = time.Hour, 0
	for i, o := range results {
		first, last = min(first, o.took), max(last, o.took)
		if !o.ok() || o.took > 4500*time.Millisecond {
			t.Errorf("caller %d: status %q err %v after %v: want 408 or the connection closed within ~2-4s", i, o.status, o.err, o.took)
		}
	}
	if c := e.mocks["plain"].Count(); c != before {
		t.Errorf("the provider saw %d requests", c-before)
	}
	t.Logf("%d stalled callers let go after %v to %v (%s); /healthz answered %d probes, slowest %v",
		n, first.Round(time.Millisecond), last.Round(time.Millisecond), results[0].status, probes, slowest.Round(time.Millisecond))
}

// trickledBody: a body arriving one byte every 500ms gets 408 by
// body_timeout.
func (e *env) trickledBody(t *testing.T) {
	c := e.g.dial(t)
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, e.g.stalledHead()+"{"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 20; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	o := await(c, start)
	close(stop)
	wg.Wait()
	if !o.ok() || o.took < 1500*time.Millisecond || o.took > 4500*time.Millisecond {
		t.Errorf("status %q err %v after %v: want 408 by body_timeout (2s)", o.status, o.err, o.took)
	}
	t.Logf("trickled body: %q after %v", o.status, o.took.Round(time.Millisecond))
}

// nonReadingStreams: four callers ask for a long stream and read nothing.
// They are cut after write_timeout (2s), and the provider is not blamed:
// it stays healthy and serves the next request.
func (e *env) nonReadingStreams(t *testing.T) {
	m := e.mocks["nonread"]
	if err := m.SetFault("tokens=100000"); err != nil {
		t.Fatal(err)
	}
	defer m.SetFault("")
	before := m.Count()
	body := chatBody("nonread", true, 0, "hi")
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: spillway\r\nAuthorization: Bearer " + e.g.key +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	var conns []net.Conn
	for range 4 {
		c := e.g.dial(t)
		defer c.Close()
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10)
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	start := time.Now()
	// All four reach the provider; the gateway cancels their answers (the
	// provider's streams end) and lets go of the four connections: its
	// side of each is closed, though the kernel may still hold the bytes
	// it had accepted for a caller that reads nothing.
	waitFor(t, 10*time.Second, "the four streams to reach the provider", func() bool { return m.Count() >= before+4 })
	waitFor(t, 15*time.Second, "the gateway to cancel the four answers", func() bool { return m.Active() == 0 })
	var queued int64
	if haveProc {
		waitFor(t, 10*time.Second, "the gateway to close the four connections", func() bool {
			queued = 0
			for _, c := range conns {
				owned, q := gatewaySide(e.g.addr, c.LocalAddr().String())
				if owned {
					return false
				}
				queued += q
			}
			return true
		})
	}
	cut := time.Since(start)
	m.SetFault("")
	var rep healthReport
	e.g.adminGet(t, "/v1/admin/health", &rep)
	for _, st := range rep.Deployments {
		if st.Deployment == "nonread" {
			if st.State != "healthy" || !st.Healthy {
				t.Errorf("after callers that did not read, the provider is %s (%s)", st.State, st.Reason)
			}
			t.Logf("the provider's health: %s", st.State)
		}
	}
	if r := e.g.chat(t, "nonread", false, 20); r.status != http.StatusOK || r.trail() != "nonread=ok" {
		t.Errorf("after callers that did not read: %s", r)
	}
	t.Logf("4 non-reading callers cut %v after their requests; the kernel still held %s for them in the gateway's closed sockets", cut.Round(time.Millisecond), mb(queued))
}

// waitFor polls cond every 20ms until it holds, failing after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// floods: 80,000 tools in a Messages body and 40,000 tool-call ids in a
// Chat body are refused as request_too_large at once, in bounded memory.
func (e *env) floods(t *testing.T) {
	list := func(n int, one func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(one(i))
		}
		return b.String()
	}
	const calls = 40000
	before := e.mocks["plain"].Count()
	for _, tc := range []struct{ name, path, body string }{
		{"messages: 80,000 tools", "/v1/messages", `{"model":"plain","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[` +
			list(80000, func(i int) string { return `{"name":"f` + strconv.Itoa(i) + `","input_schema":{"type":"object"}}` }) + `]}`},
		{"chat: 40,000 tool-call ids", "/v1/chat/completions", `{"model":"plain","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[` +
			list(calls, func(i int) string {
				return `{"id":"c` + strconv.Itoa(i) + `","type":"function","function":{"name":"f","arguments":"{}"}}`
			}) + `]},` + list(calls, func(i int) string { return `{"role":"tool","tool_call_id":"c` + strconv.Itoa(i) + `","content":"r"}` }) +
			`],"tools":[{"type":"function","function":{"name":"f"}}]}`},
	} {
		r := e.g.do(t, http.MethodPost, tc.path, e.g.key, tc.body, "Anthropic-Version", "2023-06-01")
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "request_too_large") || r.took > 2*time.Second {
			t.Errorf("%s: %s", tc.name, r)
		}
		t.Logf("%s (%.1f MB): %d in %v", tc.name, float64(len(tc.body))/mib, r.status, r.took.Round(time.Millisecond))
	}
	if c := e.mocks["plain"].Count(); c != before {
		t.Errorf("the provider saw %d requests", c-before)
	}
}

// invalidEncodings: a body that is not UTF-8 JSON, declared as something
// else, or compressed, is refused before it reaches a provider.
func (e *env) invalidEncodings(t *testing.T) {
	ok := chatBody("plain", false, 20, "hi")
	bad := chatBody("plain", false, 20, "caf") // the invalid byte goes in below
	bad = strings.Replace(bad, `"caf"`, "\"caf\xe9\"", 1)
	before := e.mocks["plain"].Count()
	for _, tc := range []struct {
		name, body string
		hdr        []string
		status     int
		code       string
	}{
		{"valid (control)", ok, nil, 200, ""},
		{"invalid UTF-8", bad, nil, 400, "invalid_encoding"},
		{"text/plain", ok, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"gzip", ok, []string{"Content-Encoding", "gzip"}, 415, "unsupported_media_type"},
	} {
		r := e.g.do(t, http.MethodPost, "/v1/chat/completions", e.g.key, tc.body, tc.hdr...)
		if r.status != tc.status || tc.code != "" && r.code != tc.code {
			t.Errorf("%s: want %d %s: %s", tc.name, tc.status, tc.code, r)
		}
	}
	if c := e.mocks["plain"].Count(); c != before+1 {
		t.Errorf("the provider saw %d requests, want only the valid one", c-before)
	}
}

// gatewaySide reports whether the gateway (listening at gw, http://host:port)
// still owns its end of the connection from client (host:port), and the
// bytes queued in it: a socket the process closed has inode 0 in
// /proc/net/tcp while the kernel still tries to deliver its queue.
func gatewaySide(gw, client string) (owned bool, queued int64) {
	port := func(hostport string) string {
		p, _ := strconv.Atoi(hostport[strings.LastIndex(hostport, ":")+1:])
		return fmt.Sprintf(":%04X", p)
	}
	local, remote := port(gw), port(client)
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || !strings.HasSuffix(f[1], local) || !strings.HasSuffix(f[2], remote) {
			continue
		}
		tx, _, _ := strings.Cut(f[4], ":")
		q, _ := strconv.ParseInt(tx, 16, 64)
		return f[9] != "0", q
	}
	return false, 0
}
