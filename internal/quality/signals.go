package quality

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
	"unsafe"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// Bounds of what is kept of one answer while it passes. Nothing here
// outlives the answer: Extract reduces it to a Sample of booleans, counts
// and the request schema's field paths.
const (
	// MaxJSONBytes: a structured answer longer than this is not parsed
	// (its JSON signals are not measured; Sample.Unmeasured says so).
	MaxJSONBytes = 256 << 10
	// MaxToolArgsBytes: tool arguments longer than this are not parsed.
	MaxToolArgsBytes = 16 << 10
	// MaxToolCalls: tool calls past this many are counted, not parsed.
	MaxToolCalls = 8
)

// Answer is what signal extraction reads of one served answer: a
// non-streamed Response (FromResponse) or what a Tap kept of a stream.
type Answer struct {
	// Text is the answer's text when the request asked for structured
	// output and it fit MaxJSONBytes; TextBytes its whole length.
	Text      []byte
	TextBytes int
	TextCut   bool
	// RefusalBytes is the visible refusal's length.
	RefusalBytes int
	// Tools are the first MaxToolCalls calls; ToolCalls counts them all.
	Tools     []ToolCall
	ToolCalls int
	Stop      canonical.StopReason
}

// ToolCall is one tool call as extraction reads it.
type ToolCall struct {
	Name string
	// Args is the arguments' JSON text ("" with Cut: too long to parse).
	Args []byte
	Cut  bool
	// ArgBytes is the arguments' whole length.
	ArgBytes int
}

// FromResponse views a whole answer. Nothing is copied.
func FromResponse(r *canonical.Response) Answer {
	a := Answer{TextBytes: len(r.Text), RefusalBytes: len(r.Refusal), ToolCalls: len(r.ToolCalls), Stop: r.Stop}
	if len(r.Text) <= MaxJSONBytes {
		a.Text = unsafeBytes(r.Text)
	} else {
		a.TextCut = true
	}
	for i := range r.ToolCalls {
		if i == MaxToolCalls {
			break
		}
		tc := &r.ToolCalls[i]
		c := ToolCall{Name: tc.Name, ArgBytes: len(tc.Arguments)}
		if len(tc.Arguments) <= MaxToolArgsBytes {
			c.Args = unsafeBytes(tc.Arguments)
		} else {
			c.Cut = true
		}
		a.Tools = append(a.Tools, c)
	}
	return a
}

// unsafeBytes views s as bytes without a copy. Extraction only reads
// them (json.Valid, a decoder): never write through the result.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Tap keeps what extraction needs of a stream as its events pass: the
// text only when the request asked for structured output (up to
// MaxJSONBytes), tool arguments up to MaxToolArgsBytes each for the first
// MaxToolCalls calls, and lengths. The zero Tap is ready; it is not safe
// for concurrent use (one stream, one goroutine).
type Tap struct {
	a       Answer
	decided bool
	json    bool
}

// Event records one event delivered to the caller.
func (t *Tap) Event(req *canonical.Request, ev *canonical.Event) {
	if !t.decided {
		t.decided, t.json = true, req != nil && req.ResponseFormat != nil && req.ResponseFormat.Type != canonical.FormatText
	}
	a := &t.a
	switch ev.Kind {
	case canonical.EventTextDelta:
		a.TextBytes += len(ev.Text)
		if t.json && !a.TextCut {
			if len(a.Text)+len(ev.Text) > MaxJSONBytes {
				a.TextCut, a.Text = true, nil
			} else {
				a.Text = append(a.Text, ev.Text...)
			}
		}
	case canonical.EventRefusalDelta:
		a.RefusalBytes += len(ev.Text)
	case canonical.EventToolCallStart:
		a.ToolCalls++
		if len(a.Tools) < MaxToolCalls {
			a.Tools = append(a.Tools, ToolCall{Name: ev.Name})
		}
	case canonical.EventToolCallDelta:
		if ev.Index < 0 || ev.Index >= len(a.Tools) {
			return
		}
		c := &a.Tools[ev.Index]
		c.ArgBytes += len(ev.Text)
		if !c.Cut {
			if len(c.Args)+len(ev.Text) > MaxToolArgsBytes {
				c.Cut, c.Args = true, nil
			} else {
				c.Args = append(c.Args, ev.Text...)
			}
		}
	}
}

// Answer is what the tap kept, ended with stop.
func (t *Tap) Answer(stop canonical.StopReason) Answer {
	a := t.a
	a.Stop = stop
	return a
}

// Sample is one answer's signals: content-free (booleans, a length, and
// which of the request schema's declared field paths it populated).
type Sample struct {
	// Structured: the request asked for JSON (json_object or json_schema).
	Structured bool
	// Measured: the JSON signals were measured (false when the answer was
	// longer than MaxJSONBytes, or is not structured).
	Measured  bool
	JSONValid bool
	// Schema: the request carried a schema that compiled; SchemaValid
	// whether the answer conforms to it (measured answers only).
	Schema      bool
	SchemaValid bool
	// Fields are the declared paths this answer observed, and whether
	// each was populated.
	Fields []Field
	// Length is the visible answer's size in bytes: text, refusal and
	// tool arguments (not reasoning).
	Length int
	Stop   canonical.StopReason
	// Refusal: the answer is a refusal (stop reason or visible refusal).
	Refusal bool
	// Truncated: the answer hit its output limit.
	Truncated bool
	// Empty: no text, refusal or tool call.
	Empty bool
	// ToolsOffered: the request declared tools; ToolCall whether the
	// answer called one.
	ToolsOffered bool
	ToolCall     bool
	// ToolArgsChecked: calls whose arguments were read; ToolArgsValid
	// whether all of them parse as a JSON object and conform to their
	// tool's declared parameters (where it compiled).
	ToolArgsChecked bool
	ToolArgsValid   bool
}

// Field is one declared field path and whether an answer populated it.
type Field struct {
	Path      string
	Populated bool
}

// Extract reduces an answer to its signals, compiling schemas afresh
// (Monitor.Extract keeps them compiled).
func Extract(req *canonical.Request, a *Answer) Sample {
	return extract(nil, req, a)
}

// Extract reduces an answer to its signals, with the Monitor's cache of
// compiled schemas. Its work is bounded by the caps above: at most
// MaxJSONBytes of answer and MaxSchemaBytes of schema are parsed, and the
// tool schemas of at most MaxToolCalls calls. It takes no Monitor lock.
func (m *Monitor) Extract(req *canonical.Request, a *Answer) Sample {
	return extract(m.schemas, req, a)
}

func extract(cache *schemaCache, req *canonical.Request, a *Answer) Sample {
	s := Sample{Stop: a.Stop, Length: a.TextBytes + a.RefusalBytes}
	for i := range a.Tools {
		s.Length += a.Tools[i].ArgBytes
	}
	s.Refusal = a.Stop == canonical.StopRefusal || a.RefusalBytes > 0
	s.Truncated = a.Stop == canonical.StopMaxTokens || a.Stop == canonical.StopContextWindow
	s.Empty = a.TextBytes == 0 && a.RefusalBytes == 0 && a.ToolCalls == 0
	s.ToolsOffered = len(req.Tools) > 0
	s.ToolCall = a.ToolCalls > 0
	if rf := req.ResponseFormat; rf != nil && rf.Type != canonical.FormatText && !s.Refusal && a.ToolCalls == 0 {
		s.Structured = true
		extractJSON(cache, &s, rf, a)
	}
	if s.ToolCall {
		checkTools(cache, &s, req, a)
	}
	return s
}

// extractJSON measures a structured answer's validity, conformance and
// field population.
func extractJSON(cache *schemaCache, s *Sample, rf *canonical.ResponseFormat, a *Answer) {
	if a.TextCut {
		return
	}
	s.Measured = true
	text := bytes.TrimSpace(a.Text)
	var sch *compiled
	if rf.Type == canonical.FormatJSONSchema {
		if sch = cache.get(rf.Schema); sch != nil && sch.node == nil {
			sch = nil
		}
	}
	s.Schema = sch != nil
	if !utf8.Valid(text) {
		return
	}
	if sch == nil {
		s.JSONValid = json.Valid(text)
		return
	}
	// One pass validates and decodes: invalid JSON is not valid for the
	// schema either, and observes no field.
	var v any
	if json.Unmarshal(text, &v) != nil {
		return
	}
	s.JSONValid = true
	s.SchemaValid = sch.node.conforms(v, 0)
	for _, p := range sch.paths {
		if obs, pop := populated(v, p); obs {
			s.Fields = append(s.Fields, Field{Path: p, Populated: pop})
		}
	}
}

// checkTools measures tool-call argument validity: every read call's
// arguments parse as a JSON object and conform to its tool's parameters.
func checkTools(cache *schemaCache, s *Sample, req *canonical.Request, a *Answer) {
	valid, checked := true, false
	for i := range a.Tools {
		c := &a.Tools[i]
		if c.Cut {
			continue
		}
		checked = true
		args := bytes.TrimSpace(c.Args)
		if len(args) == 0 {
			args = []byte("{}") // no argument deltas: an empty object
		}
		if !utf8.Valid(args) || args[0] != '{' {
			valid = false
			continue
		}
		sch := cache.get(toolSchema(req, c.Name))
		if sch == nil || sch.node == nil {
			valid = valid && json.Valid(args)
			continue
		}
		var v any
		if json.Unmarshal(args, &v) != nil || !sch.node.conforms(v, 0) {
			valid = false
		}
	}
	s.ToolArgsChecked, s.ToolArgsValid = checked, valid && checked
}

func toolSchema(req *canonical.Request, name string) []byte {
	for i := range req.Tools {
		if req.Tools[i].Name == name {
			return req.Tools[i].Parameters
		}
	}
	return nil
}
