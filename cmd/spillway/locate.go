package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Where a command finds its config and its state, the same for every
// command: never the working directory's accident.
const (
	configEnv = "SPILLWAY_CONFIG"
	// dataDirEnv names the directory relative state paths (the ledger)
	// resolve against; unset, they resolve against the config file's
	// directory.
	dataDirEnv        = "SPILLWAY_DATA"
	defaultConfigFile = "spillway.yaml"
)

// findConfig returns the config file to use: the flag's value, else
// $SPILLWAY_CONFIG, else ./spillway.yaml when it exists; otherwise an
// error that says what was looked for.
func findConfig(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := os.Getenv(configEnv); p != "" {
		return p, nil
	}
	if _, err := os.Stat(defaultConfigFile); err == nil {
		return defaultConfigFile, nil
	}
	return "", fmt.Errorf("no config: pass --config FILE, set %s, or put %s in the current directory (examples/mock.yaml in the repository runs on built-in mocks)",
		configEnv, defaultConfigFile)
}

// statePath resolves a state path from the config (the ledger): an
// absolute path as it is; a relative one against dataDir when set, else
// against the config file's directory.
func statePath(p, configPath, dataDir string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	base := dataDir
	if base == "" {
		base = filepath.Dir(configPath)
	}
	abs, err := filepath.Abs(filepath.Join(base, p))
	if err != nil {
		return filepath.Join(base, p)
	}
	return abs
}

// errNoLedger explains a ledger that is not where a command looked.
func errNoLedger(path, from string) error {
	return fmt.Errorf("no ledger at %s (%s): the gateway creates it on its first start (spillway serve); check --config, --data-dir or --db", path, from)
}

// ledgerExists reports whether the ledger file is there.
func ledgerExists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
