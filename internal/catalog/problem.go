package catalog

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong (or, from Warnings, suspicious) in a config
// file, located by line and by the field's path in the document, e.g.
// "deployments[2].timeouts.idle".
type Problem struct {
	// File is the file name as given to Load or Parse; may be empty.
	File string
	// Line is 1-based; 0 means the problem concerns the whole file or a
	// value built in code rather than read from a file.
	Line int
	// Field is the path of the offending key; empty for the whole file.
	Field string
	// Msg says what is wrong, in words an operator can act on.
	Msg string
}

// String formats p as "file:line: field: msg", leaving out the parts that
// are unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every problem found in one file. As an error it prints one
// problem per line, so that an operator fixes them all in one pass.
type Problems []Problem

// Error implements error.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns ps as an error, or nil when there are none. Use it rather than
// converting a possibly empty Problems to error, which would be non-nil.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// sortByLine orders problems top to bottom; file-wide problems (line 0)
// come first, and problems on one line keep the order they were found in.
func (ps Problems) sortByLine() {
	slices.SortStableFunc(ps, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
}
