package drill

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/spillway-gw/spillway/internal/sse"
)

// StreamKind is how a streamed answer ended, as its caller saw it.
type StreamKind uint8

const (
	// Truncated is the zero value on purpose: a stream is a silent
	// truncation until its dialect's success terminator or its typed
	// error event proves otherwise.
	Truncated StreamKind = iota
	// Complete ended with the success terminator ([DONE],
	// response.completed / response.incomplete, message_stop).
	Complete
	// Interrupted ended with the typed stream_interrupted error event.
	Interrupted
)

func (k StreamKind) String() string {
	switch k {
	case Complete:
		return "complete"
	case Interrupted:
		return "interrupted"
	}
	return "truncated"
}

// Usage is token usage as a caller saw it, normalised across dialects:
// Input counts every prompt token, cached ones (Cached) included.
type Usage struct {
	Input, Cached, Output int
}

// Stream is what a caller saw on one streamed answer.
type Stream struct {
	Kind StreamKind
	// Reason says why a stream is Truncated.
	Reason string
	// Problem names the first thing on the wire that was not well formed
	// (an event that is not JSON, an unknown or misplaced event, an event
	// after the end); "" when the stream was clean. Set whatever Kind is.
	Problem string
	// Model is the model the stream's opening event named.
	Model string
	// Usage is the final usage of a Complete stream (HasUsage says whether
	// one was sent).
	Usage    Usage
	HasUsage bool
	// Delivered is the typed error's delivered_tokens.
	Delivered int
	// Events counts the events read.
	Events int
}

// streamState follows one stream, event by event.
type streamState struct {
	d   Dialect
	out Stream
	// done: the success terminator was seen; errSeen: the typed error
	// event was (Responses then needs response.failed); ended: nothing may
	// follow.
	done, errSeen, ended bool
	sawDelta             bool // Anthropic: message_delta came before message_stop
}

// ReadStream reads a streamed answer in dialect d to its end and classifies
// it. It reads every event (the connection is drained), decodes only the
// opening, usage and error events, and checks that every event is JSON
// framed as its dialect frames it.
func ReadStream(d Dialect, r io.Reader) Stream { return readStream(d, r, nil) }

// readStream is ReadStream that also reports, as a problem, any event
// holding one of the secrets (provider detail no caller may see).
func readStream(d Dialect, r io.Reader, secrets [][]byte) Stream {
	rd := sse.NewReader(r)
	defer rd.Release()
	st := streamState{d: d}
	for {
		ev, err := rd.Next()
		if err != nil {
			return st.finish(err)
		}
		st.out.Events++
		st.event(ev.Name, ev.Data)
		if s := leaked(ev.Data, secrets); s != "" {
			st.problem("an event names " + s)
		}
	}
}

// leaked returns the first secret found in b, "" when none is.
func leaked(b []byte, secrets [][]byte) string {
	for _, s := range secrets {
		if bytes.Contains(b, s) {
			return strconv.Quote(string(s))
		}
	}
	return ""
}

func (st *streamState) problem(p string) {
	if st.out.Problem == "" {
		st.out.Problem = p
	}
}

// finish decides the outcome once the stream ended with err (io.EOF for a
// clean end).
func (st *streamState) finish(err error) Stream {
	o := &st.out
	clean := errors.Is(err, io.EOF)
	switch {
	case st.done && !st.errSeen:
		o.Kind = Complete
		if !clean {
			st.problem("read error after the terminator: " + err.Error())
		}
		if !o.HasUsage {
			st.problem("complete stream without usage")
		}
	case st.errSeen && st.ended:
		o.Kind = Interrupted
		if !clean {
			st.problem("read error after the error event: " + err.Error())
		}
	case st.errSeen:
		o.Reason = "typed error event not followed by response.failed"
	case !clean:
		o.Reason = "cut: " + err.Error()
	case o.Events == 0:
		o.Reason = "no events"
	default:
		o.Reason = "ended without a terminator or a typed error event"
	}
	return *o
}

// event takes one event.
func (st *streamState) event(name, data []byte) {
	if st.ended {
		st.problem("event after the end of the stream")
		st.done, st.errSeen = false, false // neither terminator nor error is last
		return
	}
	if st.d == Chat {
		st.chat(name, data)
		return
	}
	// Responses and Messages name every event, and the data's type is the
	// name: {"type":"<name>",...
	if len(name) == 0 {
		st.problem("event without a name")
		return
	}
	if !bytes.HasPrefix(data, []byte(`{"type":"`)) || !bytes.HasPrefix(data[len(`{"type":"`):], name) ||
		len(data) <= len(`{"type":"`)+len(name) || data[len(`{"type":"`)+len(name)] != '"' {
		st.problem("event " + clip(name) + " whose data does not start with its type")
		return
	}
	if st.d == Responses {
		st.responses(string(name), data)
	} else {
		st.messages(string(name), data)
	}
}

func (st *streamState) chat(name, data []byte) {
	if len(name) != 0 {
		st.problem("chat event with a name: " + clip(name))
	}
	if string(data) == "[DONE]" {
		st.done, st.ended = true, true
		return
	}
	if bytes.HasPrefix(data, []byte(`{"error":`)) {
		var e struct {
			Error struct {
				Type      string `json:"type"`
				Delivered *int   `json:"delivered_tokens"`
			} `json:"error"`
		}
		if !st.decode(data, &e) {
			st.ended = true
			return
		}
		if e.Error.Type != "stream_interrupted" || e.Error.Delivered == nil || *e.Error.Delivered < 0 ||
			!hasKeys(data, `"type":"stream_interrupted"`, `"delivered_tokens":`) {
			st.problem("chat error event that is not a typed stream_interrupted")
			st.ended = true // an untyped error ends the stream: a truncation
			return
		}
		st.errSeen, st.ended, st.out.Delivered = true, true, *e.Error.Delivered
		return
	}
	switch {
	case st.out.Events == 1:
		var c struct {
			Model string `json:"model"`
		}
		if st.decode(data, &c) {
			st.out.Model = c.Model
		}
	case bytes.Contains(data, []byte(`"usage":{`)):
		var c struct {
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Details    struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if st.decode(data, &c) && c.Usage != nil {
			st.out.Usage = Usage{Input: c.Usage.Prompt, Cached: c.Usage.Details.Cached, Output: c.Usage.Completion}
			st.out.HasUsage = true
		}
	default:
		st.valid(data)
	}
}

// decode decodes an event the drill reads fields from; invalid JSON (which
// Unmarshal finds as it goes, so the event is scanned once) is a problem.
func (st *streamState) decode(data []byte, v any) bool {
	if err := json.Unmarshal(data, v); err != nil {
		st.problem("event is not the JSON expected: " + err.Error())
		return false
	}
	return true
}

// valid checks an event the drill reads nothing from.
func (st *streamState) valid(data []byte) {
	if !json.Valid(data) {
		st.problem("event is not valid JSON")
	}
}

// responsesUsage is the Responses usage object.
type responsesUsage struct {
	Input   int `json:"input_tokens"`
	Details struct {
		Cached int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	Output int `json:"output_tokens"`
}

func (st *streamState) responses(name string, data []byte) {
	switch name {
	case "response.created":
		var e struct {
			Response struct {
				Model string `json:"model"`
			} `json:"response"`
		}
		if st.decode(data, &e) {
			st.out.Model = e.Response.Model
		}
	case "response.completed", "response.incomplete":
		var e struct {
			Response struct {
				Usage *responsesUsage `json:"usage"`
			} `json:"response"`
		}
		if st.decode(data, &e) && e.Response.Usage != nil {
			u := e.Response.Usage
			st.out.Usage = Usage{Input: u.Input, Cached: u.Details.Cached, Output: u.Output}
			st.out.HasUsage = true
		}
		st.done, st.ended = true, true
	case "error":
		var e struct {
			Code      string `json:"code"`
			Delivered *int   `json:"delivered_tokens"`
		}
		if !st.decode(data, &e) {
			st.ended = true
			return
		}
		if e.Code != "stream_interrupted" || e.Delivered == nil || *e.Delivered < 0 ||
			!hasKeys(data, `"code":"stream_interrupted"`, `"delivered_tokens":`) {
			st.problem("error event that is not a typed stream_interrupted")
			st.ended = true
			return
		}
		st.errSeen, st.out.Delivered = true, *e.Delivered
	case "response.failed":
		st.valid(data)
		if !st.errSeen {
			st.problem("response.failed without the typed error event")
		}
		st.ended = true
	default:
		st.valid(data)
		if st.errSeen {
			st.problem("event " + name + " between the error event and response.failed")
		}
	}
}

func (st *streamState) messages(name string, data []byte) {
	switch name {
	case "message_start":
		var e struct {
			Message struct {
				Model string `json:"model"`
			} `json:"message"`
		}
		if st.decode(data, &e) {
			st.out.Model = e.Message.Model
		}
	case "message_delta":
		var e struct {
			Usage *struct {
				Input       int `json:"input_tokens"`
				CacheWrite  int `json:"cache_creation_input_tokens"`
				CacheRead   int `json:"cache_read_input_tokens"`
				OutputToken int `json:"output_tokens"`
			} `json:"usage"`
		}
		if st.decode(data, &e) && e.Usage != nil {
			u := e.Usage
			st.out.Usage = Usage{Input: u.Input + u.CacheWrite + u.CacheRead, Cached: u.CacheRead, Output: u.OutputToken}
			st.out.HasUsage = true
		}
		st.sawDelta = true
	case "message_stop":
		st.valid(data)
		if !st.sawDelta {
			st.problem("message_stop without message_delta")
		}
		st.done, st.ended = true, true
	case "error":
		var e struct {
			Error struct {
				Type      string `json:"type"`
				Delivered *int   `json:"delivered_tokens"`
			} `json:"error"`
		}
		if !st.decode(data, &e) {
			st.ended = true
			return
		}
		if e.Error.Type != "stream_interrupted" || e.Error.Delivered == nil || *e.Error.Delivered < 0 ||
			!hasKeys(data, `"type":"stream_interrupted"`, `"delivered_tokens":`) {
			st.problem("error event that is not a typed stream_interrupted")
			st.ended = true
			return
		}
		st.errSeen, st.ended, st.out.Delivered = true, true, *e.Error.Delivered
	case "content_block_start", "content_block_delta", "content_block_stop", "ping":
		st.valid(data)
	default:
		st.problem("unknown event " + name)
	}
}

// Answer is what a caller saw in one non-streamed success body.
type Answer struct {
	Model string
	Usage Usage
	// Text is the answer's first text (empty for a tool call).
	Text string
}

// ParseAnswer decodes a non-streamed success body in dialect d. A body
// that is not its dialect's answer object (not JSON, no usage) is an error.
func ParseAnswer(d Dialect, body []byte) (Answer, error) {
	var a Answer
	switch d {
	case Chat:
		var b struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content *string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Details    struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return a, err
		}
		if b.Object != "chat.completion" || b.Usage == nil || len(b.Choices) != 1 {
			return a, errors.New("not a chat.completion with one choice and usage")
		}
		a.Model = b.Model
		a.Usage = Usage{Input: b.Usage.Prompt, Cached: b.Usage.Details.Cached, Output: b.Usage.Completion}
		if c := b.Choices[0].Message.Content; c != nil {
			a.Text = *c
		}
	case Responses:
		var b struct {
			Object string `json:"object"`
			Model  string `json:"model"`
			Output []struct {
				Type    string `json:"type"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
			Usage *responsesUsage `json:"usage"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return a, err
		}
		if b.Object != "response" || b.Usage == nil {
			return a, errors.New("not a response with usage")
		}
		a.Model = b.Model
		a.Usage = Usage{Input: b.Usage.Input, Cached: b.Usage.Details.Cached, Output: b.Usage.Output}
		for _, o := range b.Output {
			if o.Type == "message" && len(o.Content) > 0 {
				a.Text = o.Content[0].Text
				break
			}
		}
	case Messages:
		var b struct {
			Type    string `json:"type"`
			Model   string `json:"model"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Usage *struct {
				Input      int `json:"input_tokens"`
				CacheWrite int `json:"cache_creation_input_tokens"`
				CacheRead  int `json:"cache_read_input_tokens"`
				Output     int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return a, err
		}
		if b.Type != "message" || b.Usage == nil {
			return a, errors.New("not a message with usage")
		}
		a.Model = b.Model
		u := b.Usage
		a.Usage = Usage{Input: u.Input + u.CacheWrite + u.CacheRead, Cached: u.CacheRead, Output: u.Output}
		for _, c := range b.Content {
			if c.Type == "text" {
				a.Text = c.Text
				break
			}
		}
	default:
		return a, errors.New("unknown dialect")
	}
	return a, nil
}

// ParseError decodes an error body in dialect d's error shape and returns
// its stable code (or, when it has none, its type).
func ParseError(d Dialect, body []byte) (string, error) {
	var b struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string  `json:"type"`
			Code    *string `json:"code"`
			Message string  `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return "", err
	}
	switch {
	case b.Error == nil || b.Error.Type == "" || b.Error.Message == "":
		return "", errors.New("no error object with a type and a message")
	case d == Messages && b.Type != "error":
		return "", errors.New(`Anthropic error body without "type":"error"`)
	case d != Messages && b.Type != "":
		return "", errors.New("OpenAI error body with a top-level type")
	}
	if b.Error.Code != nil && *b.Error.Code != "" {
		return *b.Error.Code, nil
	}
	return b.Error.Type, nil
}

// hasKeys reports whether data holds every one of the exact byte strings:
// encoding/json matches keys case-insensitively, the wire check must not.
func hasKeys(data []byte, keys ...string) bool {
	for _, k := range keys {
		if !bytes.Contains(data, []byte(k)) {
			return false
		}
	}
	return true
}

// clip bounds a wire value quoted in a problem.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
