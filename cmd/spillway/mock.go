package main

import (
	"context"
	"errors"
	"flag"
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
func runMock(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("spillway mock", flag.ContinueOnError)
	fs.SetOutput(stdout)
	kind := fs.String("kind", "", "provider wire format: openai, anthropic, bedrock or gemini (required)")
	listen := fs.String("listen", "127.0.0.1:9001", "address to listen on")
	name := fs.String("name", "", `name shown in reply text ("mock <name> ..."); default: the kind`)
	keyEnv := fs.String("api-key-env", "", "environment variable holding the API key to require; empty: accept any")
	fault := fs.String("fault", "", `mock-wide fault script, e.g. "status=529" or "p=0.3;die_after=3"`)
	seed := fs.Int64("seed", 1, "seed for probabilistic (p=) faults")
	model := fs.String("model", "", "model id reported in answers; empty: the request's model")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spillway mock --kind openai|anthropic|bedrock|gemini [flags]")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "\ncontrol: PUT /_mock/fault (body: script), GET /_mock/stats, POST /_mock/reset;\nper request: header X-Mock-Fault. See internal/mock for the script items.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // usage was asked for and printed
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *kind == "" {
		return errors.New("--kind is required (openai or anthropic)")
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
