package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"text/tabwriter"
)

// runVersion prints the module version, the VCS revision it was built
// from, and the Go version.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "usage: spillway version\n\nPrints the module version, the VCS revision, time and state it was built from, and the Go version.", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	writeVersion(stdout, bi, ok)
	return nil
}

// writeVersion prints bi. Without VCS settings (go run, go test, or a
// build outside the repository) it says the revision is unknown and why.
func writeVersion(w io.Writer, bi *debug.BuildInfo, ok bool) {
	version, path, goVersion := "(unknown)", "github.com/spillway-gw/spillway", runtime.Version()
	vcs := map[string]string{}
	if ok && bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.Main.Path != "" {
			path = bi.Main.Path
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
	}
	fmt.Fprintf(w, "spillway %s\n", version)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  module\t%s\n", path)
	if rev := vcs["vcs.revision"]; rev != "" {
		state := "clean"
		if vcs["vcs.modified"] == "true" {
			state = "modified (uncommitted changes)"
		}
		fmt.Fprintf(tw, "  revision\t%s\n", rev)
		if t := vcs["vcs.time"]; t != "" {
			fmt.Fprintf(tw, "  commit time\t%s\n", t)
		}
		fmt.Fprintf(tw, "  tree\t%s\n", state)
	} else {
		fmt.Fprintf(tw, "  revision\tunknown (go run and go test stamp none unless -buildvcs=true; go build in the git checkout does unless -buildvcs=false)\n")
	}
	fmt.Fprintf(tw, "  go\t%s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	_ = tw.Flush()
}
