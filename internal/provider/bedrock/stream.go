package bedrock

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Limits of one event-stream message, as the AWS decoders enforce them.
// The SDK's eventstream.Decoder checks none of them, and trusts the
// prelude's lengths, so the stream checks them before each decode.
const (
	minMessage  = 16 // prelude (8) + prelude CRC (4) + message CRC (4)
	maxHeaders  = 128 << 10
	maxPayload  = 16 << 20
	preludeSize = 12
	// keepPayload bounds the payload buffer a stream returns to the pool.
	keepPayload = 64 << 10
)

// frameReader is what a stream reads through: pooled, so a steady stream
// of answers costs no buffer allocations.
type frameReader struct {
	br      *bufio.Reader
	body    bodyReader
	dec     *eventstream.Decoder
	payload []byte
}

var framePool = sync.Pool{New: func() any {
	return &frameReader{br: bufio.NewReaderSize(nil, 8<<10), dec: eventstream.NewDecoder(), payload: make([]byte, 0, 4<<10)}
}}

// bodyReader remembers the body's own read error, so a broken connection
// (or a cancelled context) is told apart from bytes that do not decode. A
// body that merely ends, cleanly or mid-chunk, is not such an error: it is
// a truncation, judged by what was read.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// stream is a canonical.Stream over a ConverseStream body. No goroutine is
// involved: Next reads the next message and decodes it in place.
type stream struct {
	mu     sync.Mutex // serialises Next with Close's release of fr
	closed atomic.Bool
	body   io.ReadCloser
	fr     *frameReader
	dec    decoder
	q      []canonical.Event
	head   int
	err    error // sticky: io.EOF after metadata, or the failure
}

var (
	_ canonical.Stream = (*stream)(nil)
	_ canonical.Pender = (*stream)(nil)
)

// Pending reports whether an event is available without blocking.
func (s *stream) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head < len(s.q) || (s.fr != nil && s.fr.br.Buffered() > 0)
}

func newStream(body io.ReadCloser, requestID, model string) *stream {
	fr := framePool.Get().(*frameReader)
	fr.body = bodyReader{r: body}
	fr.br.Reset(&fr.body)
	return &stream{body: body, fr: fr, dec: decoder{requestID: requestID, model: model},
		q: make([]canonical.Event, 0, 4)}
}

// Next returns the next event, io.EOF after metadata, or a *failure.Error;
// once it returned an error it returns the same one again.
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
		msg, err := s.fr.next()
		if err != nil {
			s.err = err
			continue
		}
		s.err = s.dec.message(&msg, &s.q)
	}
}

// Close closes the body (unblocking a Next in progress) and then returns
// the read buffers to their pool. It is idempotent.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.body.Close()
	s.mu.Lock()
	s.fr.release()
	s.fr = nil
	s.mu.Unlock()
	return err
}

func (fr *frameReader) release() {
	fr.br.Reset(nil)
	fr.body = bodyReader{}
	if cap(fr.payload) > keepPayload {
		fr.payload = make([]byte, 0, 4<<10)
	}
	framePool.Put(fr)
}

// next reads one message. Its payload aliases the reader's buffer and is
// valid until the next call.
func (fr *frameReader) next() (eventstream.Message, error) {
	if err := fr.checkPrelude(); err != nil {
		return eventstream.Message{}, err
	}
	msg, err := fr.dec.Decode(fr.br, fr.payload[:0])
	if err != nil {
		return eventstream.Message{}, fr.readError(err)
	}
	if cap(msg.Payload) > cap(fr.payload) {
		fr.payload = msg.Payload[:0] // keep the grown buffer
	}
	return msg, nil
}

// checkPrelude peeks at the next prelude and refuses lengths no real
// message has, before the decoder would trust them.
func (fr *frameReader) checkPrelude() error {
	p, err := fr.br.Peek(preludeSize)
	if err != nil {
		if len(p) == 0 && errors.Is(err, io.EOF) && fr.body.err == nil {
			return failure.Truncated("body ended before metadata")
		}
		return fr.readError(err)
	}
	total, headers := binary.BigEndian.Uint32(p), binary.BigEndian.Uint32(p[4:])
	switch {
	case total < minMessage, headers > maxHeaders, headers > total-minMessage:
		return failure.Malformed("event-stream prelude with impossible lengths", nil)
	case total-minMessage-headers > maxPayload:
		return failure.Malformed("event-stream payload larger than 16 MiB", nil)
	}
	return nil
}

// readError classifies a failed read: the body's own error is a broken
// transport (its cause wrapped, so a cancelled context stays visible), a
// body that ended is a truncation, and anything else is bytes that are not
// an event stream.
func (fr *frameReader) readError(err error) error {
	switch {
	case fr.body.err != nil:
		return failure.Transport(fr.body.err, false)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failure.Truncated("body ended before metadata")
	}
	return failure.Malformed("event-stream message", err)
}

// toolBlock maps a content block index to its tool call's ordinal.
type toolBlock struct{ block, ordinal int }

// decoder turns ConverseStream messages into canonical events. It holds the
// per-stream state and is used by one goroutine at a time.
type decoder struct {
	requestID, model string
	json             jsonread.Decoder
	// tools maps toolUse blocks to ordinals 0, 1, ... (text blocks take
	// block indexes too).
	tools []toolBlock
	// thinks maps reasoningContent blocks to ordinals.
	thinks []toolBlock
	// stopped: messageStop arrived; malformed names its malformed_* reason.
	stopped   bool
	malformed string
}

// message handles one message, pushing what it yields onto q. It returns
// io.EOF after metadata, the stream's last event.
func (d *decoder) message(msg *eventstream.Message, q *[]canonical.Event) error {
	switch header(msg, eventstreamapi.MessageTypeHeader) {
	case eventstreamapi.EventMessageType:
		return d.event(header(msg, eventstreamapi.EventTypeHeader), msg.Payload, q)
	case eventstreamapi.ExceptionMessageType:
		return d.exception(header(msg, eventstreamapi.ExceptionTypeHeader), msg.Payload)
	case eventstreamapi.ErrorMessageType:
		// An unmodelled error: the service failed, whatever it says.
		code, text := header(msg, eventstreamapi.ErrorCodeHeader), header(msg, eventstreamapi.ErrorMessageHeader)
		return &failure.Error{Class: failure.ProviderUnavailable, ProviderType: code,
			Detail: "in-stream error " + code + ": " + text}
	}
	return failure.Malformed("event-stream message without a known :message-type", nil)
}

// header returns a string header's value, "" when absent or not a string.
func header(msg *eventstream.Message, name string) string {
	for i := range msg.Headers {
		if h := &msg.Headers[i]; h.Name == name {
			if v, ok := h.Value.(eventstream.StringValue); ok {
				return string(v)
			}
			return ""
		}
	}
	return ""
}

// exception classifies an in-stream exception by the status its name
// stands for.
func (d *decoder) exception(name string, payload []byte) error {
	_, msg := parseErrorBody(payload)
	return failure.Classify(failure.Answer{Status: statusOf(name), Type: name, Message: msg})
}

// payload is what one event's JSON carries, as far as the gateway cares.
type payload struct {
	index     int
	toolID    string
	toolName  string
	isTool    bool // contentBlockStart.start.toolUse
	text      string
	toolInput string
	// reasoning, signature, redacted: a reasoningContent delta.
	reasoning, signature, redacted string
	stop                           canonical.StopReason
	stopKind                       stopKind
	malformed                      string // the malformed_* stop reason, verbatim
	usage                          usage
	hasUsage                       bool
}

// event handles one event by its :event-type. Unknown events are skipped,
// as the SDK does with union members it does not know.
func (d *decoder) event(name string, data []byte, q *[]canonical.Event) error {
	switch name {
	case "messageStart", "contentBlockStart", "contentBlockDelta", "messageStop", "metadata":
	default:
		return nil // contentBlockStop and anything newer carry nothing needed
	}
	p := payload{stop: canonical.StopEnd}
	if err := d.parse(data, &p); err != nil {
		return failure.Malformed(name+" event", err)
	}
	switch name {
	case "messageStart":
		*q = append(*q, canonical.Event{Kind: canonical.EventStart, ID: d.requestID, Name: d.model})
	case "contentBlockStart":
		if p.isTool {
			ord := len(d.tools)
			d.tools = append(d.tools, toolBlock{block: p.index, ordinal: ord})
			*q = append(*q, canonical.Event{Kind: canonical.EventToolCallStart, Index: ord, ID: p.toolID, Name: p.toolName})
		}
	case "contentBlockDelta":
		// Text blocks have no start: their first delta opens them.
		if p.text != "" {
			*q = append(*q, canonical.Event{Kind: canonical.EventTextDelta, Text: p.text})
		}
		if p.toolInput != "" {
			if ord, ok := ordinal(d.tools, p.index); ok {
				*q = append(*q, canonical.Event{Kind: canonical.EventToolCallDelta, Index: ord, Text: p.toolInput})
			}
		}
		// Reasoning blocks, like text, open with their first delta.
		if p.reasoning != "" || p.signature != "" || p.redacted != "" {
			ord, ok := ordinal(d.thinks, p.index)
			if !ok {
				ord = len(d.thinks)
				d.thinks = append(d.thinks, toolBlock{block: p.index, ordinal: ord})
			}
			switch {
			case p.reasoning != "":
				*q = append(*q, canonical.Event{Kind: canonical.EventThinkingDelta, Index: ord, Text: p.reasoning})
			case p.signature != "":
				*q = append(*q, canonical.Event{Kind: canonical.EventThinkingSignature, Index: ord, Text: p.signature, Family: canonical.FamilyClaude})
			default:
				*q = append(*q, canonical.Event{Kind: canonical.EventRedactedThinking, Index: ord, Text: p.redacted, Family: canonical.FamilyClaude})
			}
		}
	case "messageStop":
		d.stopped = true
		if p.stopKind == stopMalformed {
			// Reported after metadata, so the usage still arrives.
			d.malformed = p.malformed
			return nil
		}
		*q = append(*q, canonical.Event{Kind: canonical.EventStop, Stop: p.stop})
	case "metadata":
		if p.hasUsage {
			*q = append(*q, canonical.Event{Kind: canonical.EventUsage, Usage: p.usage.canonical()})
		}
		switch {
		case !d.stopped:
			return failure.Truncated("metadata arrived without messageStop")
		case d.malformed != "":
			return malformedOutput(d.malformed)
		}
		return io.EOF
	}
	return nil
}

// ordinal finds the ordinal of the block at index.
func ordinal(blocks []toolBlock, block int) (int, bool) {
	for _, t := range blocks {
		if t.block == block {
			return t.ordinal, true
		}
	}
	return 0, false
}

// parse reads one event payload into p, reading only the members used and
// skipping the rest (including the "p" padding real streams carry).
func (d *decoder) parse(data []byte, p *payload) error {
	j := &d.json
	j.Reset(data)
	j.Object(func(key []byte) {
		switch string(key) {
		case "contentBlockIndex":
			p.index = j.Int()
		case "start": // contentBlockStart
			j.Object(func(key []byte) {
				if string(key) != "toolUse" {
					return
				}
				p.isTool = true
				j.Object(func(key []byte) {
					switch string(key) {
					case "toolUseId":
						p.toolID = j.Str()
					case "name":
						p.toolName = j.Str()
					}
				})
			})
		case "delta": // contentBlockDelta
			j.Object(func(key []byte) {
				switch string(key) {
				case "text":
					p.text = j.Str()
				case "toolUse":
					j.Object(func(key []byte) {
						if string(key) == "input" {
							p.toolInput = j.Str()
						}
					})
				case "reasoningContent":
					j.Object(func(key []byte) {
						switch string(key) {
						case "text":
							p.reasoning = j.Str()
						case "signature":
							p.signature = j.Str()
						case "redactedContent":
							p.redacted = j.Str()
						}
					})
				}
			})
		case "stopReason": // messageStop
			// Mapped at once: the bytes alias a buffer later members reuse.
			raw := j.Bytes()
			p.stop, p.stopKind = stopReason(raw)
			if p.stopKind == stopMalformed {
				p.malformed = string(raw)
			}
		case "usage": // metadata
			p.usage, p.hasUsage = readUsage(j), true
		}
	})
	return j.End()
}
