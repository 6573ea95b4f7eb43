package openairesponses

import (
	"slices"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// outPart is one content part of a streamed message item.
type outPart struct {
	refusal bool
	open    bool
	// text is the part's text so far, JSON-escaped without quotes: the
	// .done events and the final response repeat it by copying, never by
	// escaping it again.
	text []byte
}

// outItem is one output item of a streamed answer.
type outItem struct {
	call bool
	// reasoning items carry one thinking block: its summary text so far
	// (JSON-escaped, without quotes) and, once known, its signature.
	reasoning   bool
	thinkIndex  int
	summary     []byte
	summaryOpen bool
	block       canonical.Part
	open        bool
	out         int // output_index
	// refStart:refEnd is the item's rendered ref in encoder.refs.
	refStart, refEnd int
	status           string // set when closed
	// message items
	parts []outPart
	// function_call items
	index        int // the canonical tool call index
	callID, name string
	args         []byte // JSON-escaped, without quotes
}

// encoder writes one Responses event stream: every event carries its type
// twice (event: line and data.type) and the next sequence_number. Text and
// arguments are kept (already escaped) until the item closes, because the
// .done events and the terminal response repeat them whole; that memory is
// bounded by the answer itself.
type encoder struct {
	d *Dialect
	// Rendered once: the response object's head (to the status value), its
	// members before the output items, and the echoed parameters (to the
	// usage value). base is the escaped item id base.
	head, mid, echo, base []byte
	seq                   int64
	items                 []outItem
	msg                   int // index in items of the open message, -1 when none
	ended                 bool

	// Room for the common answer (a message with one part, or a couple
	// of calls) inside the encoder's two allocations: items and the first
	// part start here, and spare is where the first text or arguments
	// accumulate until they outgrow it.
	itemArr [2]outItem
	partArr [1]outPart
	spare   []byte
	refs    []byte
}

// spareText is the room kept for the first accumulated text, spareRefs
// for the rendered refs of the first few items.
const (
	spareText = 1 << 10
	spareRefs = 256
)

// textBuf returns a buffer to accumulate one part's text or one call's
// arguments in.
func (e *encoder) textBuf() []byte {
	if b := e.spare; b != nil {
		e.spare = nil
		return b
	}
	return make([]byte, 0, 256)
}

// NewEncoder starts encoding one streamed answer.
func (d *Dialect) NewEncoder(m dialect.Meta, req *canonical.Request) dialect.Encoder {
	buf := make([]byte, 0, 1024+2*len(m.ID)+len(m.Model)+spareText+spareRefs)
	buf = appendHead(buf, m)
	h := len(buf)
	buf = appendMid(buf, m, req)
	mi := len(buf)
	buf = appendEcho(buf, req)
	ec := len(buf)
	buf = itemIDBase(buf, m.ID)
	bs := len(buf)
	buf = slices.Grow(buf, spareRefs+spareText) // a no-op unless the echo was unusually long
	e := &encoder{d: d, msg: -1}
	e.items = e.itemArr[:0]
	e.head, e.mid, e.echo, e.base = buf[:h:h], buf[h:mi:mi], buf[mi:ec:ec], buf[ec:bs:bs]
	e.refs = buf[bs : bs : bs+spareRefs]
	e.spare = buf[bs+spareRefs : bs+spareRefs]
	return e
}

// begin opens an event of type typ, inside its data object.
func begin(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	return append(dst, '"')
}

// end closes an event with the next sequence number.
func (e *encoder) end(dst []byte) []byte {
	dst = append(dst, `,"sequence_number":`...)
	dst = jsonwrite.AppendInt(dst, e.seq)
	e.seq++
	return append(dst, "}\n\n"...)
}

// ref appends an event's item_id and output_index, rendered once per item
// into e.refs: every delta repeats them.
func (e *encoder) ref(dst []byte, it *outItem) []byte {
	if it.refEnd == 0 {
		start := len(e.refs)
		e.refs = append(e.refs, `,"item_id":`...)
		switch {
		case it.call:
			e.refs = appendItemID(e.refs, "fc_", e.base, it.out)
		case it.reasoning:
			e.refs = appendItemID(e.refs, "rs_", e.base, it.out)
		default:
			e.refs = appendItemID(e.refs, "msg_", e.base, it.out)
		}
		e.refs = append(e.refs, `,"output_index":`...)
		e.refs = jsonwrite.AppendInt(e.refs, int64(it.out))
		it.refStart, it.refEnd = start, len(e.refs)
	}
	return append(dst, e.refs[it.refStart:it.refEnd]...)
}

func appendContentIndex(dst []byte, c int) []byte {
	dst = append(dst, `,"content_index":`...)
	return jsonwrite.AppendInt(dst, int64(c))
}

// response appends a whole response object.
func (e *encoder) response(dst []byte, status string, completedAt int64, errMsg, reason string, u *canonical.Usage) []byte {
	dst = append(dst, e.head...)
	dst = appendState(dst, status, completedAt, errMsg, reason)
	dst = append(dst, e.mid...)
	for i := range e.items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = e.appendItem(dst, &e.items[i])
	}
	dst = append(dst, e.echo...)
	if u == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendUsage(dst, *u)
	}
	return append(dst, '}')
}

// appendItem appends an item as it stands; an item still open is written
// with status in_progress (or the status given to it at Interrupt).
func (e *encoder) appendItem(dst []byte, it *outItem) []byte {
	status := it.status
	if status == "" {
		status = statusInProgress
	}
	if it.call {
		return appendCallItem(dst, e.base, it.out, status, it.callID, it.name, it.args)
	}
	if it.reasoning {
		return appendReasoningItem(dst, e.base, it.out, status, it.summary, &it.block)
	}
	dst = appendMessageOpen(dst, e.base, it.out, status)
	for k := range it.parts {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = appendPart(dst, &it.parts[k])
	}
	return append(dst, "]}"...)
}

func appendPart(dst []byte, p *outPart) []byte {
	if p.refusal {
		return appendRefusalPart(dst, p.text)
	}
	return appendTextPart(dst, p.text)
}

// Start writes response.created and response.in_progress.
func (e *encoder) Start(dst []byte) []byte {
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		dst = begin(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = e.response(dst, statusInProgress, 0, "", "", nil)
		dst = e.end(dst)
	}
	return dst
}

// Event writes the events for one canonical event; empty fragments and
// non-semantic events write nothing.
func (e *encoder) Event(dst []byte, ev *canonical.Event) []byte {
	if e.ended {
		return dst
	}
	switch ev.Kind {
	case canonical.EventThinkingDelta, canonical.EventThinkingSignature, canonical.EventRedactedThinking:
		return e.reasoningEvent(dst, ev)
	case canonical.EventTextDelta, canonical.EventRefusalDelta:
		if ev.Text == "" {
			return dst
		}
		dst = e.closeReasoning(dst)
		return e.contentDelta(dst, ev.Kind == canonical.EventRefusalDelta, ev.Text)
	case canonical.EventToolCallStart:
		dst = e.closeReasoning(dst)
		if e.msg >= 0 {
			dst = e.closeItem(dst, e.msg, statusCompleted)
		}
		e.items = append(e.items, outItem{call: true, open: true, out: len(e.items), index: ev.Index, callID: ev.ID, name: ev.Name})
		it := &e.items[len(e.items)-1]
		dst = begin(dst, "response.output_item.added")
		dst = append(dst, `,"output_index":`...)
		dst = jsonwrite.AppendInt(dst, int64(it.out))
		dst = append(dst, `,"item":`...)
		// No arguments yet: "" until the deltas come.
		dst = appendCallItemHead(dst, e.base, it.out, statusInProgress, it.callID, it.name)
		dst = append(dst, `"}`...)
		return e.end(dst)
	case canonical.EventToolCallDelta:
		if ev.Text == "" {
			return dst
		}
		it := e.openCall(ev.Index)
		if it == nil {
			return dst // no start for it: nothing a caller could attach it to
		}
		dst = begin(dst, "response.function_call_arguments.delta")
		dst = e.ref(dst, it)
		dst = append(dst, `,"delta":"`...)
		at := len(dst)
		dst = appendEscaped(dst, ev.Text)
		if it.args == nil {
			it.args = e.textBuf()
		}
		it.args = append(it.args, dst[at:]...)
		dst = append(dst, '"')
		return e.end(dst)
	}
	return dst
}

// reasoningEvent writes a thinking event as a reasoning item: its summary
// text streams as reasoning_summary_text deltas; its signature (or a
// redacted block's data) becomes the item's encrypted_content, marked so
// that spillway can send it back to the provider family that made it.
func (e *encoder) reasoningEvent(dst []byte, ev *canonical.Event) []byte {
	if ev.Text == "" {
		return dst
	}
	var it *outItem
	for i := range e.items {
		if c := &e.items[i]; c.reasoning && c.open && c.thinkIndex == ev.Index && ev.Kind != canonical.EventRedactedThinking {
			it = c
		}
	}
	if it == nil {
		dst = e.closeReasoning(dst)
		if e.msg >= 0 {
			dst = e.closeItem(dst, e.msg, statusCompleted)
		}
		e.items = append(e.items, outItem{reasoning: true, open: true, out: len(e.items), thinkIndex: ev.Index,
			block: canonical.Part{Type: canonical.PartThinking}})
		it = &e.items[len(e.items)-1]
		dst = begin(dst, "response.output_item.added")
		dst = append(dst, `,"output_index":`...)
		dst = jsonwrite.AppendInt(dst, int64(it.out))
		dst = append(dst, `,"item":`...)
		dst = appendReasoningItem(dst, e.base, it.out, statusInProgress, nil, &it.block)
		dst = e.end(dst)
	}
	switch ev.Kind {
	case canonical.EventThinkingSignature:
		it.block.Signature, it.block.Family = ev.Text, ev.Family
		return dst
	case canonical.EventRedactedThinking:
		it.block = canonical.Part{Type: canonical.PartRedactedThinking, Data: ev.Text, Family: ev.Family}
		return e.closeItem(dst, len(e.items)-1, statusCompleted)
	}
	if !it.summaryOpen {
		it.summaryOpen = true
		dst = begin(dst, "response.reasoning_summary_part.added")
		dst = e.ref(dst, it)
		dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":""}`...)
		dst = e.end(dst)
	}
	dst = begin(dst, "response.reasoning_summary_text.delta")
	dst = e.ref(dst, it)
	dst = append(dst, `,"summary_index":0,"delta":"`...)
	at := len(dst)
	dst = appendEscaped(dst, ev.Text)
	it.summary = append(it.summary, dst[at:]...)
	dst = append(dst, '"')
	return e.end(dst)
}

// closeReasoning closes the open reasoning items: the answer moved on.
func (e *encoder) closeReasoning(dst []byte) []byte {
	for i := range e.items {
		if it := &e.items[i]; it.reasoning && it.open {
			dst = e.closeItem(dst, i, statusCompleted)
		}
	}
	return dst
}

// openCall finds the open function_call item of a canonical tool index.
func (e *encoder) openCall(index int) *outItem {
	for i := len(e.items) - 1; i >= 0; i-- {
		if it := &e.items[i]; it.call && it.open && it.index == index {
			return it
		}
	}
	return nil
}

// contentDelta writes a text or refusal delta, opening the message item
// and the right content part first when needed.
func (e *encoder) contentDelta(dst []byte, refusal bool, text string) []byte {
	if e.msg < 0 {
		e.msg = len(e.items)
		e.items = append(e.items, outItem{open: true, out: len(e.items)})
		dst = begin(dst, "response.output_item.added")
		dst = append(dst, `,"output_index":`...)
		dst = jsonwrite.AppendInt(dst, int64(e.msg))
		dst = append(dst, `,"item":`...)
		dst = appendMessageOpen(dst, e.base, e.msg, statusInProgress)
		dst = append(dst, "]}"...)
		dst = e.end(dst)
	}
	it := &e.items[e.msg]
	if n := len(it.parts); n == 0 || it.parts[n-1].refusal != refusal {
		if n > 0 {
			dst = e.closePart(dst, it, n-1)
		}
		if it.parts == nil && e.partArr[0].text == nil {
			it.parts = e.partArr[:0]
		}
		it.parts = append(it.parts, outPart{refusal: refusal, open: true, text: e.textBuf()})
		dst = begin(dst, "response.content_part.added")
		dst = e.ref(dst, it)
		dst = appendContentIndex(dst, n)
		dst = append(dst, `,"part":`...)
		if refusal {
			dst = append(dst, `{"type":"refusal","refusal":""}`...)
		} else {
			dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":""}`...)
		}
		dst = e.end(dst)
	}
	c := len(it.parts) - 1
	p := &it.parts[c]
	if refusal {
		dst = begin(dst, "response.refusal.delta")
	} else {
		dst = begin(dst, "response.output_text.delta")
	}
	dst = e.ref(dst, it)
	dst = appendContentIndex(dst, c)
	dst = append(dst, `,"delta":"`...)
	at := len(dst)
	dst = appendEscaped(dst, text)
	p.text = append(p.text, dst[at:]...)
	dst = append(dst, '"')
	if !refusal {
		dst = append(dst, `,"logprobs":[]`...)
	}
	return e.end(dst)
}

// closePart writes a content part's .done events with its whole text.
func (e *encoder) closePart(dst []byte, it *outItem, c int) []byte {
	p := &it.parts[c]
	p.open = false
	if p.refusal {
		dst = begin(dst, "response.refusal.done")
		dst = e.ref(dst, it)
		dst = appendContentIndex(dst, c)
		dst = append(dst, `,"refusal":"`...)
		dst = append(dst, p.text...)
		dst = append(dst, '"')
	} else {
		dst = begin(dst, "response.output_text.done")
		dst = e.ref(dst, it)
		dst = appendContentIndex(dst, c)
		dst = append(dst, `,"text":"`...)
		dst = append(dst, p.text...)
		dst = append(dst, `","logprobs":[]`...)
	}
	dst = e.end(dst)
	dst = begin(dst, "response.content_part.done")
	dst = e.ref(dst, it)
	dst = appendContentIndex(dst, c)
	dst = append(dst, `,"part":`...)
	dst = appendPart(dst, p)
	return e.end(dst)
}

// closeItem writes an item's remaining .done events and output_item.done.
func (e *encoder) closeItem(dst []byte, i int, status string) []byte {
	it := &e.items[i]
	if it.reasoning && it.summaryOpen {
		it.summaryOpen = false
		dst = begin(dst, "response.reasoning_summary_text.done")
		dst = e.ref(dst, it)
		dst = append(dst, `,"summary_index":0,"text":"`...)
		dst = append(dst, it.summary...)
		dst = append(dst, `"`...)
		dst = e.end(dst)
		dst = begin(dst, "response.reasoning_summary_part.done")
		dst = e.ref(dst, it)
		dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":"`...)
		dst = append(dst, it.summary...)
		dst = append(dst, `"}`...)
		dst = e.end(dst)
	}
	if it.call {
		dst = begin(dst, "response.function_call_arguments.done")
		dst = e.ref(dst, it)
		dst = append(dst, `,"name":`...)
		dst = jsonwrite.AppendString(dst, it.name)
		dst = append(dst, `,"arguments":"`...)
		if len(it.args) == 0 {
			dst = append(dst, "{}"...)
		} else {
			dst = append(dst, it.args...)
		}
		dst = append(dst, '"')
		dst = e.end(dst)
	} else if !it.reasoning {
		if n := len(it.parts); n > 0 && it.parts[n-1].open {
			dst = e.closePart(dst, it, n-1)
		}
		e.msg = -1
	}
	it.open, it.status = false, status
	dst = begin(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = jsonwrite.AppendInt(dst, int64(it.out))
	dst = append(dst, `,"item":`...)
	dst = e.appendItem(dst, it)
	return e.end(dst)
}

// Finish closes every open item, in output order, then writes
// response.completed, or response.incomplete when the answer was cut short
// (its open items are then incomplete too).
func (e *encoder) Finish(dst []byte, stop canonical.StopReason, _ string, u canonical.Usage) []byte {
	if e.ended {
		return dst
	}
	e.ended = true
	status, reason := outcome(stop)
	for i := range e.items {
		if e.items[i].open {
			dst = e.closeItem(dst, i, status)
		}
	}
	var completedAt int64
	typ := "response.incomplete"
	if status == statusCompleted {
		completedAt, typ = e.d.unix(), "response.completed"
	}
	dst = begin(dst, typ)
	dst = append(dst, `,"response":`...)
	dst = e.response(dst, status, completedAt, "", reason, &u)
	return e.end(dst)
}

// Interrupt ends a broken stream with an error event (the typed
// interruption, at top level as the Responses error event has it) and then
// response.failed, whose items show what was delivered, open ones as
// incomplete. There is no response.completed, so no client can take the
// truncated answer for a whole one.
func (e *encoder) Interrupt(dst []byte, pe *failure.Public, deliveredTokens int) []byte {
	if e.ended {
		return dst
	}
	e.ended = true
	dst = begin(dst, "error")
	dst = append(dst, `,"code":"stream_interrupted","message":`...)
	dst = jsonwrite.AppendString(dst, pe.Message)
	dst = append(dst, `,"param":null,"retryable":`...)
	dst = strconv.AppendBool(dst, pe.Retryable)
	dst = append(dst, `,"delivered_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(deliveredTokens))
	dst = e.end(dst)
	for i := range e.items {
		if it := &e.items[i]; it.open {
			it.open, it.status = false, statusIncomplete
		}
	}
	dst = begin(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	dst = e.response(dst, statusFailed, 0, pe.Message, "", nil)
	return e.end(dst)
}
