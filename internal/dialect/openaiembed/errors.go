package openaiembed

import (
	"errors"
	"strings"
)

func asType[T error](err error, target *T) bool { return errors.As(err, target) }

// unknownField reads encoding/json's "json: unknown field \"x\"".
func unknownField(err error) (string, bool) {
	f, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	return strings.Trim(f, `"`), true
}
