package gemini

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Gemini's alt=sse body is read the way go-genai reads it, not as general
// SSE: blocks separated by a blank line; a block whose text before the
// first ':' is "data" carries one GenerateContentResponse; any other block
// is a bare {"error":{...}} object (how Gemini reports an error inside a
// stream; a general SSE reader would drop it as an unknown field). A last
// block without its blank line is still read, as go-genai does.
//
// There is no terminal event: the body just ends. The answer is complete
// only if a finishReason (or a prompt block) arrived before it ended; a
// body that ends without one is failure.Truncated. Once a finishReason
// arrived, the body is read on to its end (a later chunk may still carry
// usage), and a broken read after it does not undo the complete answer.

// maxBlock bounds one block, as sse.MaxEventSize bounds an SSE event.
const maxBlock = 16 << 20

var (
	errBlockTooLarge = errors.New("gemini: stream block larger than 16 MiB")
	// errLastLine marks a final line that the body ended without a newline.
	errLastLine = errors.New("gemini: last line without a newline")
)

// readerPool holds the stream readers' buffers across streams.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// stream is a canonical.Stream over a streamGenerateContent body. No
// goroutine is involved: Next does the reading.
type stream struct {
	mu     sync.Mutex // serialises Next with Close's release of br
	closed atomic.Bool
	body   io.ReadCloser
	br     *bufio.Reader
	line   []byte // a line longer than br's buffer
	block  []byte
	dec    decoder
	q      []canonical.Event
	head   int
	err    error // sticky: io.EOF after a complete answer, or the failure
}

var (
	_ canonical.Stream = (*stream)(nil)
	_ canonical.Pender = (*stream)(nil)
)

// Pending reports whether an event is available without blocking.
func (s *stream) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head < len(s.q) || (s.br != nil && s.br.Buffered() > 0)
}

func newStream(body io.ReadCloser) *stream {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(body)
	return &stream{body: body, br: br, q: make([]canonical.Event, 0, 4)}
}

// Next returns the next event, io.EOF after a complete answer, or a
// *failure.Error; once it returned an error it returns the same one again.
func (s *stream) Next() (canonical.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.head < len(s.q) {
			ev := s.q[s.head]
			s.q[s.head] = canonical.Event{} // drop references early
			s.head++
			return ev, nil
		}
		if s.err != nil {
			return canonical.Event{}, s.err
		}
		if s.closed.Load() {
			return canonical.Event{}, failure.Transport(provider.ErrStreamClosed, false)
		}
		s.q, s.head = s.q[:0], 0
		blk, last, err := s.readBlock()
		if err != nil {
			s.err = s.readError(err)
			continue
		}
		s.err = s.dec.block(blk, last, &s.q)
	}
}

// Close closes the body (unblocking a Next in progress) and then returns
// the reader's buffer to its pool. It is idempotent.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.body.Close()
	s.mu.Lock()
	if s.br != nil {
		s.br.Reset(nil)
		readerPool.Put(s.br)
		s.br = nil
	}
	s.mu.Unlock()
	return err
}

// readError decides what a failed read means: the end of the body is the
// end of a complete answer only after a finishReason; before one it is a
// truncation. After a finishReason nothing that breaks the read can make
// the answer incomplete.
func (s *stream) readError(err error) error {
	if s.dec.finished {
		return io.EOF
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failure.Truncated("body ended before a finishReason")
	case errors.Is(err, errBlockTooLarge):
		return failure.Malformed("stream block too large", err)
	}
	return failure.Transport(err, false)
}

// readBlock returns the next non-empty block, its lines joined with "\n".
// last is true for a block the body ended without a blank line after.
func (s *stream) readBlock() (blk []byte, last bool, err error) {
	s.block = s.block[:0]
	for {
		line, err := s.readLine()
		switch err {
		case nil:
		case errLastLine:
			if len(line) > 0 {
				s.block = appendLine(s.block, line)
			}
			if len(s.block) == 0 {
				return nil, false, io.EOF
			}
			return s.block, true, nil
		case io.EOF:
			if len(s.block) > 0 {
				return s.block, true, nil
			}
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
		if len(line) == 0 {
			if len(s.block) > 0 {
				return s.block, false, nil
			}
			continue // blank lines between blocks
		}
		if len(s.block)+len(line) >= maxBlock {
			return nil, false, errBlockTooLarge
		}
		s.block = appendLine(s.block, line)
	}
}

func appendLine(block, line []byte) []byte {
	if len(block) > 0 {
		block = append(block, '\n')
	}
	return append(block, line...)
}

// readLine returns one line without its terminator (LF or CRLF), valid
// until the next call; a last line without a terminator comes with
// errLastLine.
func (s *stream) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.line = append(s.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.line) >= maxBlock {
				return nil, errBlockTooLarge
			}
			line, err = s.br.ReadSlice('\n')
			s.line = append(s.line, line...)
		}
		line = s.line
	}
	switch {
	case err == nil:
		line = line[:len(line)-1]
	case err == io.EOF && len(line) > 0:
		err = errLastLine
	case err != nil:
		return nil, err
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, err
}

// chunk is what one GenerateContentResponse carries, filled whole before
// any event is queued, since members may come in any order.
type chunk struct {
	cand            candidate
	hasCand         bool
	block, blockMsg string
	usage           usage
	hasUsage        bool
	id, model       string
	rpc             rpcError
	isErr           bool
}

// decoder turns stream blocks into canonical events. It holds the
// per-stream state and is used by one goroutine at a time.
type decoder struct {
	dec     jsonread.Decoder
	c       chunk
	started bool
	// signed: the thinking block's signature went out (the first wins:
	// several parts may carry one).
	signed bool
	// thought: a thought part arrived, so the answer has a thinking block.
	thought bool
	// finished: a finishReason or a prompt block arrived; the body may end.
	finished bool
	// calls counts the function calls so far: each one's ordinal.
	calls     int
	respID    string
	lastUsage canonical.Usage
}

// block handles one block, appending what it yields to q.
func (s *decoder) block(blk []byte, last bool, q *[]canonical.Event) error {
	if blk[0] == ':' {
		return nil // an SSE comment: Gemini sends none, a proxy might
	}
	prefix, payload, _ := bytes.Cut(blk, []byte(":"))
	if string(prefix) != "data" {
		if e, ok := parseRPC(blk); ok {
			return e.answer()
		}
		if last {
			return failure.Truncated("body ended inside a block")
		}
		return failure.Malformed("stream block that is neither data nor an error", nil)
	}
	if err := s.decode(payload); err != nil {
		if last {
			return failure.Truncated("body ended inside a chunk")
		}
		return failure.Malformed("streamGenerateContent chunk", err)
	}
	c := &s.c
	if c.isErr {
		return c.rpc.answer()
	}
	if !s.started {
		s.started = true
		s.respID = c.id
		*q = append(*q, canonical.Event{Kind: canonical.EventStart, ID: c.id, Name: c.model})
	}
	for i := range c.cand.parts {
		p := &c.cand.parts[i]
		switch {
		case p.call:
			ord := s.calls
			s.calls++
			*q = append(*q,
				canonical.Event{Kind: canonical.EventToolCallStart, Index: ord, ID: callID(p.id, s.respID, ord), Name: p.name},
				canonical.Event{Kind: canonical.EventToolCallDelta, Index: ord, Text: p.args})
		case p.thought:
			// A thought summary: the answer's one thinking block.
			s.thought = true
			if p.text != "" {
				*q = append(*q, canonical.Event{Kind: canonical.EventThinkingDelta, Index: 0, Text: p.text})
			}
		case p.text == "":
		default:
			*q = append(*q, canonical.Event{Kind: canonical.EventTextDelta, Text: p.text})
		}
		// The signature closes the thinking block. One on a function call
		// with no thought before it belongs to the call, which the
		// canonical form cannot carry: it is left out, as before.
		if p.sig != "" && s.thought && !s.signed {
			s.signed = true
			*q = append(*q, canonical.Event{Kind: canonical.EventThinkingSignature, Index: 0, Text: p.sig, Family: canonical.FamilyGemini})
		}
	}
	blocked := c.block != "" && !s.finished && (!c.hasCand || len(c.cand.parts) == 0 && c.cand.finish == finishNone)
	if blocked {
		*q = append(*q, canonical.Event{Kind: canonical.EventRefusalDelta, Text: blockedText(c.block, c.blockMsg)})
	}
	if c.hasUsage {
		// Cumulative: the last wins, and an unchanged count is not repeated.
		if u := c.usage.canonical(); u != s.lastUsage {
			s.lastUsage = u
			*q = append(*q, canonical.Event{Kind: canonical.EventUsage, Usage: u})
		}
	}
	switch {
	case s.finished:
	case blocked:
		s.finished = true
		*q = append(*q, canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopRefusal})
	case c.cand.finish == finishBadCall:
		return badCall(c.cand.finishName)
	case c.cand.finish != finishNone:
		s.finished = true
		*q = append(*q, canonical.Event{Kind: canonical.EventStop, Stop: c.cand.finish.stop(s.calls > 0)})
	}
	return nil
}

// decode parses one chunk into s.c, reading only the members used. The
// response id and model are kept from the first chunk only (they repeat on
// every chunk).
func (s *decoder) decode(data []byte) error {
	d := &s.dec
	d.Reset(data)
	c := &s.c
	c.hasCand, c.hasUsage, c.isErr = false, false, false
	c.cand.parts, c.cand.finish = c.cand.parts[:0], finishNone
	c.block, c.blockMsg = "", ""
	if d.Peek() != '{' {
		d.Skip()
		if d.Err() == nil {
			return &jsonread.SyntaxError{Msg: "chunk is not an object"}
		}
		return d.Err()
	}
	d.Object(func(key []byte) {
		switch string(key) {
		case "candidates":
			d.Array(func() {
				if !c.hasCand {
					c.hasCand = true
					readCandidate(d, &c.cand)
				}
			})
		case "promptFeedback":
			c.block, c.blockMsg = readFeedback(d)
		case "usageMetadata":
			c.usage, c.hasUsage = readUsage(d), true
		case "modelVersion":
			if !s.started {
				c.model = d.Str()
			}
		case "responseId":
			if !s.started {
				c.id = d.Str()
			}
		case "error":
			if c.isErr = !d.IsNull(); c.isErr {
				c.rpc = rpcError{}
				readRPCError(d, &c.rpc)
			}
		}
	})
	return d.End()
}
