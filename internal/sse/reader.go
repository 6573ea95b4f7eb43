// Package sse reads and writes server-sent events (text/event-stream) with
// pooled buffers and no allocation per event in the steady state.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxEventSize bounds one event's data; a provider that sends more is broken.
const MaxEventSize = 16 << 20

// ErrEventTooLarge is returned when an event's data passes MaxEventSize.
var ErrEventTooLarge = errors.New("sse: event larger than 16 MiB")

// Event is one dispatched event. Its slices are valid until the next call to
// Reader.Next or Reader.Release (they may point into the reader's buffer).
type Event struct {
	// Name is the value of the last "event:" field; empty when none.
	Name []byte
	// Data is the "data:" fields joined with "\n".
	Data []byte
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// Reader parses an event stream. It is not safe for concurrent use.
type Reader struct {
	br   *bufio.Reader
	name []byte
	data []byte
	// inPlace is the event's only data line so far, still in br's buffer:
	// most events are one data line and a blank line that arrive
	// together, and then need no copy. It is copied into data before any
	// read that could refill (and so move) the buffer.
	inPlace []byte
	line    []byte
	hasData bool
}

// NewReader returns a Reader over r using a pooled buffer; call Release when
// done with it.
func NewReader(r io.Reader) *Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return &Reader{br: br}
}

// Buffered is the number of bytes already read from the input but not yet
// parsed: more than zero means the next event may be available without
// blocking.
func (r *Reader) Buffered() int {
	if r.br == nil {
		return 0
	}
	return r.br.Buffered()
}

// Release returns the Reader's buffer to the pool. The Reader must not be
// used afterwards.
func (r *Reader) Release() {
	if r.br != nil {
		r.br.Reset(nil)
		readerPool.Put(r.br)
		r.br = nil
	}
}

// Next returns the next event. At the end of input it returns io.EOF; an
// event not closed by a blank line before the end is discarded, as the SSE
// specification says, and io.ErrUnexpectedEOF is returned instead so that a
// caller can tell a cut stream from a finished one.
func (r *Reader) Next() (Event, error) {
	r.name = r.name[:0]
	r.data = r.data[:0]
	r.inPlace = nil
	r.hasData = false
	pending := false
	for {
		if r.inPlace != nil && !r.lineBuffered() {
			r.data = append(r.data, r.inPlace...)
			r.inPlace = nil
		}
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && pending {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.inPlace != nil {
				return Event{Name: r.name, Data: r.inPlace}, nil
			}
			if r.hasData {
				return Event{Name: r.name, Data: r.data}, nil
			}
			// A blank line with no data dispatches nothing (spec).
			r.name = r.name[:0]
			pending = false
			continue
		}
		pending = true
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if !r.hasData {
				if len(value) > MaxEventSize {
					return Event{}, ErrEventTooLarge
				}
				r.inPlace, r.hasData = value, true
				continue
			}
			if r.inPlace != nil {
				r.data = append(r.data, r.inPlace...)
				r.inPlace = nil
			}
			r.data = append(r.data, '\n')
			if len(r.data)+len(value) > MaxEventSize {
				return Event{}, ErrEventTooLarge
			}
			r.data = append(r.data, value...)
		case "event":
			r.name = append(r.name[:0], value...)
		}
		// "id", "retry" and unknown fields are ignored.
	}
}

// lineBuffered reports whether a whole line is already in the buffer, so
// that reading it will not refill (and move) the buffer.
func (r *Reader) lineBuffered() bool {
	b, _ := r.br.Peek(r.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// readLine returns one line without its terminator (LF or CRLF). The slice
// is valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == nil {
		return trimEOL(line), nil
	}
	if err == bufio.ErrBufferFull {
		r.line = append(r.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(r.line) > MaxEventSize {
				return nil, ErrEventTooLarge
			}
			line, err = r.br.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		if err == nil {
			return trimEOL(r.line), nil
		}
		line = r.line
	}
	if err == io.EOF && len(line) > 0 {
		// A last line without a terminator: the event is incomplete.
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}
