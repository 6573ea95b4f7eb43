package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spillway-gw/spillway/internal/mock"
)

// mockShutdownGrace bounds how long in-flight answers may run on after the
// mock is told to stop; stalls are cut at once.
const mockShutdownGrace = 5 * time.Second

// runMock runs one fault-injecting mock provider until ctx is cancelled.
func runMock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mock", `usage: spillway mock --kind openai|anthropic|bedrock|gemini [flags]

Runs one fault-injecting mock provider speaking the kind's wire format.
Control: PUT /_mock/fault (body: script), GET /_mock/stats, POST /_mock/reset;
per request: header X-Mock-Fault. See internal/mock for the script items.`, stderr)
	kind := fs.String("kind", "", "provider wire format: openai, anthropic, bedrock or gemini (required)")
	listen := fs.String("listen", "127.0.0.1:9001", "address to listen on")
	name := fs.String("name", "", `name shown in reply text ("mock <name> ..."); default: the kind`)
	keyEnv := fs.String("api-key-env", "", "environment variable holding the API key to require; empty: accept any")
	fault := fs.String("fault", "", `mock-wide fault script, e.g. "status=529" or "p=0.3;die_after=3"`)
	seed := fs.Int64("seed", 1, "seed for probabilistic (p=) faults")
	model := fs.String("model", "", "model id reported in answers; empty: the request's model")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *kind == "" {
		return usageErrorf("--kind is required (openai, anthropic, bedrock or gemini)")
	}
	if *name == "" {
		*name = *kind
	}
	var key string
	if *keyEnv != "" {
		key = os.Getenv(*keyEnv)
		if key == "" {
			return fmt.Errorf("--api-key-env: environment variable %s is empty or unset", *keyEnv)
		}
	}
	m, err := mock.New(*kind, mock.Options{Name: *name, APIKey: key, Fault: *fault, Seed: *seed, Model: *model})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	// No ReadTimeout or WriteTimeout: they would cut long streams and the
	// stalls the mock exists to produce.
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "spillway mock: %s provider %q listening on http://%s\n", *kind, *name, ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	m.Close() // cut stalled requests, which would otherwise hold Shutdown
	sctx, cancel := context.WithTimeout(context.Background(), mockShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
