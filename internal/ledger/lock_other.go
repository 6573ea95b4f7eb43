//go:build !unix

package ledger

import "os"

// lockFile is a no-op where flock(2) does not exist: one gateway per
// ledger file is then the operator's to ensure.
func lockFile(*os.File) error { return nil }
