package server_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// A caller that announces a body and withholds it is answered and let go:
// at once when the answer needs no body (a missing key, an unknown path),
// with a 408 after body_timeout when it does; a trickled body the same.
func TestStalledBodies(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Server.BodyTimeout = catalog.Duration(300 * time.Millisecond)
	}, rungSpec{"primary", "openai"})
	addr := strings.TrimPrefix(h.gw.URL, "http://")
	send := func(head string, trickle bool) (status string, took time.Duration, closed bool) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		if _, err := io.WriteString(c, head+"\r\nContent-Length: 1000\r\nContent-Type: application/json\r\n\r\n{\"mo"); err != nil {
			t.Fatal(err)
		}
		if trickle {
			go func() {
				for i := 0; i < 50; i++ {
					time.Sleep(50 * time.Millisecond)
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer after %v: %v", time.Since(start), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		took = time.Since(start)
		// The server closes the connection at once: the next read ends
		// well before this side's own deadline, with EOF, or with a reset
		// when the trickle's bytes reached a socket already closed.
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = br.ReadByte()
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout()
		return resp.Status, took, err != nil && !timedOut
	}
	for _, tc := range []struct {
		name, head, status string
		trickle            bool
		fast               bool
	}{
		{"no key: answered at once", "POST /v1/chat/completions HTTP/1.1\r\nHost: x", "401 Unauthorized", false, true},
		{"unknown path: answered at once", "POST /v1/nosuch HTTP/1.1\r\nHost: x", "404 Not Found", false, true},
		{"a key, the body withheld: 408 after body_timeout", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + h.key, "408 Request Timeout", false, false},
		{"a key, the body trickled: 408 after body_timeout", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + h.key, "408 Request Timeout", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, took, closed := send(tc.head, tc.trickle)
			if status != tc.status || !closed {
				t.Fatalf("status %q closed %v, want %q and the connection closed", status, closed, tc.status)
			}
			if tc.fast && took > 200*time.Millisecond || took > 5*time.Second {
				t.Errorf("answered after %v", took)
			}
		})
	}
}

// A caller that stops reading a stream is cut off after write_timeout as a
// caller that left: the provider, whose stream went unread meanwhile, is
// not blamed, so two such callers do not open a healthy primary's circuit
// and fail every tenant over.
func TestNonReadingCallerIsNeutralToHealth(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		// Longer than the provider's idle bound (testIdle): while the caller
		// does not read, that bound must not run.
		c.Server.WriteTimeout = catalog.Duration(3 * testIdle)
		c.Deployments[0].MaxOutputTokens, c.Deployments[0].ContextWindow = 1<<20, 1<<21 // room for the long answer below
		// The mock takes a while to start so long an answer (590ms seen
		// under -race on 2 cores); only the silence once it streams is
		// under test.
		c.Deployments[0].Timeouts.FirstByte = catalog.Duration(10 * time.Second)
		c.Deployments[0].Timeouts.Total = catalog.Duration(time.Minute)
	}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	// An answer of megabytes: more than the sockets between the gateway
	// and a caller that reads nothing can buffer.
	h.fault("primary", "tokens=100000")
	addr := strings.TrimPrefix(h.gw.URL, "http://")
	body := `{"model":"` + publicModel + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10) // keep this side's buffer small
		}
		req := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + h.key +
			"\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 1024), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Read nothing more; the gateway's writes block, then time out.
		row := h.waitRow(t, resp.Header.Get("X-Request-Id"))
		c.Close()
		if row.status != "cancelled" || row.failureClass != "client_cancelled" {
			t.Fatalf("caller %d: row %+v, want cancelled by the caller", i, row)
		}
	}
	h.fault("primary", "")
	r := chat(t, h, false, hello())
	if r.err != nil || hdr(r.resp, "X-Spillway-Deployment") != "primary" || hdr(r.resp, "X-Spillway-Trail") != "primary=ok" {
		t.Fatalf("after two non-reading callers: err %v, trail %q: the primary was blamed", r.err, hdr(r.resp, "X-Spillway-Trail"))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A body is JSON as UTF-8, uncompressed, declared as JSON or not at all;
// anything else is refused rather than misread.
func TestBodyEncoding(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	ok := `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"}]}`
	bad := `{"model":"` + publicModel + `","messages":[{"role":"user","content":"caf` + "\xe9" + `"}]}`
	for _, tc := range []struct {
		name, body, ctype, enc string
		status                 int
		code                   string
	}{
		{"JSON", ok, "application/json", "", 200, ""},
		{"JSON with a charset", ok, "application/json; charset=utf-8", "", 200, ""},
		{"no content type", ok, "", "", 200, ""},
		{"invalid UTF-8", bad, "application/json", "", 400, "invalid_encoding"},
		{"text/plain", ok, "text/plain", "", 415, "unsupported_media_type"},
		{"a form", ok, "application/x-www-form-urlencoded", "", 415, "unsupported_media_type"},
		{"gzip", ok, "application/json", "gzip", 415, "unsupported_media_type"},
		{"identity", ok, "application/json", "identity", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+h.key)
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.enc != "" {
				req.Header.Set("Content-Encoding", tc.enc)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || tc.code != "" && !strings.Contains(string(b), `"code":"`+tc.code+`"`) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
	if c := h.counts(); c["primary"] != 4 {
		t.Errorf("the provider saw %d requests, want only the 4 accepted", c["primary"])
	}
}
