package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Script is a parsed fault script: which fault to inject and how to shape the
// answer. A Script is immutable once parsed and safe to share between
// concurrent requests.
//
// Syntax: items separated by ';', each either key=value or a bare flag.
// Whitespace around items, keys and values is ignored, empty items are
// skipped. A value runs to the next ';', so it may contain '=' but never ';'.
type Script struct {
	// Fault part: gated by P.
	status     int    // error status to answer with; 0 = none
	errorType  string // overrides the provider error type
	errorCode  string // overrides the provider error code (OpenAI)
	message    string // overrides the error (or refusal) message
	retryAfter int    // retry-after seconds; -1 = not sent
	retryMS    int    // retry-after-ms; -1 = not sent
	delay      time.Duration
	stall      bool
	after      afterFault // what happens after afterK content events
	afterK     int
	noTerminal bool
	refusal    bool
	eventDelay time.Duration
	// omitField: a JSON answer leaves out this top-level field.
	omitField string

	// Shaping part: always applies, whatever P rolls.
	tokens int    // content tokens of a text answer; -1 = default
	cached int    // cached input tokens
	tool   string // tool to call; "" = the first (or the forced) tool
	tools  int    // parallel tool calls; 0 = one
	args   string // compact JSON arguments; "" = default
	// ignoreLimit: the answer's length ignores the request's max tokens,
	// as a broken provider's would.
	ignoreLimit bool
	// reportIn and reportOut, when set, replace the usage the answer
	// reports (any int64, negative or absurd, as a hostile provider's).
	reportIn, reportOut       int64
	hasReportIn, hasReportOut bool

	// Gating.
	p     float64 // probability the fault part applies; 1 = always
	times int     // mock-wide: number of requests it applies to; 0 = all
}

// afterFault is a stream fault that fires after K content events.
type afterFault uint8

const (
	afterNone afterFault = iota
	afterStall
	afterDie
	afterError
	afterMalformed
)

var afterKeys = [...]string{"", "stall_after", "die_after", "error_after", "malformed_after"}

// Limits keep a script from asking the mock for absurd work.
const (
	maxTokens     = 100_000
	maxToolCalls  = 16
	maxCached     = 1 << 30
	maxEventIndex = 1 << 20
)

// ParseScript parses a fault script. A script that changes nothing (such as
// "") means healthy and parses to a nil *Script.
func ParseScript(s string) (*Script, error) {
	sc := healthyScript()
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, hasVal := strings.Cut(item, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if seen[key] {
			return nil, fmt.Errorf("mock script: %q given twice", key)
		}
		seen[key] = true
		if err := sc.set(key, val, hasVal); err != nil {
			return nil, fmt.Errorf("mock script: %w", err)
		}
	}
	if err := sc.validate(seen); err != nil {
		return nil, fmt.Errorf("mock script: %w", err)
	}
	if *sc == *healthyScript() { // e.g. "" or "delay=0": nothing to do
		return nil, nil
	}
	return sc, nil
}

func (sc *Script) set(key, val string, hasVal bool) error {
	switch key {
	case "stall", "no_terminal", "refusal", "ignore_limit":
		if hasVal {
			return fmt.Errorf("%s is a flag and takes no value", key)
		}
		switch key {
		case "stall":
			sc.stall = true
		case "no_terminal":
			sc.noTerminal = true
		case "ignore_limit":
			sc.ignoreLimit = true
		default:
			sc.refusal = true
		}
		return nil
	}
	if !hasVal || val == "" {
		if !knownKey(key) {
			return fmt.Errorf("unknown item %q", key)
		}
		return fmt.Errorf("%s needs a value (%s=...)", key, key)
	}
	var err error
	switch key {
	case "status":
		sc.status, err = intIn(key, val, 400, 599)
	case "error_type":
		sc.errorType, err = word(key, val)
	case "error_code":
		sc.errorCode, err = word(key, val)
	case "message":
		sc.message = val
	case "retry_after":
		sc.retryAfter, err = intIn(key, val, 0, 86400)
	case "retry_after_ms":
		sc.retryMS, err = intIn(key, val, 0, 86400_000)
	case "delay":
		sc.delay, err = duration(key, val)
	case "event_delay":
		sc.eventDelay, err = duration(key, val)
	case "stall_after", "die_after", "error_after", "malformed_after":
		if sc.after != afterNone {
			return fmt.Errorf("%s and %s exclude each other", afterKeys[sc.after], key)
		}
		for i, k := range afterKeys {
			if k == key {
				sc.after = afterFault(i)
			}
		}
		sc.afterK, err = intIn(key, val, 0, maxEventIndex)
	case "tokens":
		sc.tokens, err = intIn(key, val, 0, maxTokens)
	case "cached":
		sc.cached, err = intIn(key, val, 0, maxCached)
	case "omit_field":
		sc.omitField, err = fieldName(val)
	case "tool":
		sc.tool, err = toolName(val)
	case "tools":
		sc.tools, err = intIn(key, val, 1, maxToolCalls)
	case "args":
		sc.args, err = jsonObject(val)
	case "report_input", "report_output":
		var n int64
		if n, err = strconv.ParseInt(val, 10, 64); err != nil {
			return fmt.Errorf("%s=%q: want an integer", key, val)
		}
		if key == "report_input" {
			sc.reportIn, sc.hasReportIn = n, true
		} else {
			sc.reportOut, sc.hasReportOut = n, true
		}
	case "p":
		sc.p, err = probability(val)
	case "times":
		sc.times, err = intIn(key, val, 1, math.MaxInt32)
	default:
		return fmt.Errorf("unknown item %q", key)
	}
	return err
}

func knownKey(k string) bool {
	switch k {
	case "status", "error_type", "error_code", "message", "retry_after", "retry_after_ms",
		"delay", "event_delay", "stall_after", "die_after", "error_after", "malformed_after",
		"tokens", "cached", "tool", "tools", "args", "p", "times", "report_input", "report_output", "omit_field":
		return true
	}
	return false
}

// validate rejects combinations that cannot all happen to one request, so a
// typo in a test shows up as an error instead of a silently ignored item.
func (sc *Script) validate(seen map[string]bool) error {
	if sc.status != 0 && sc.stall {
		return fmt.Errorf("status and stall exclude each other")
	}
	if (sc.status != 0 || sc.stall) && sc.after != afterNone {
		return fmt.Errorf("%s needs a successful stream; drop status/stall", afterKeys[sc.after])
	}
	if (sc.status != 0 || sc.stall) && sc.omitField != "" {
		return fmt.Errorf("omit_field needs a successful answer; drop status/stall")
	}
	if (sc.status != 0 || sc.stall) && (sc.noTerminal || sc.refusal) {
		return fmt.Errorf("no_terminal and refusal need a successful answer; drop status/stall")
	}
	errorish := sc.status != 0 || sc.after == afterError
	for _, k := range []string{"error_type", "message"} {
		if seen[k] && !errorish && !(k == "message" && sc.refusal) {
			return fmt.Errorf("%s needs status= or error_after=", k)
		}
	}
	if seen["error_code"] && !errorish {
		return fmt.Errorf("error_code needs status= or error_after=")
	}
	if (seen["retry_after"] || seen["retry_after_ms"]) && sc.status == 0 {
		return fmt.Errorf("retry_after needs status=")
	}
	return nil
}

func intIn(key, val string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want an integer in [%d, %d]", key, val, lo, hi)
	}
	return n, nil
}

func duration(key, val string) (time.Duration, error) {
	d, err := time.ParseDuration(val)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative Go duration such as 250ms", key, val)
	}
	return d, nil
}

func probability(val string) (float64, error) {
	f, err := strconv.ParseFloat(val, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return 0, fmt.Errorf("p=%q: want a probability in [0, 1]", val)
	}
	return f, nil
}

// word accepts the characters provider error types and codes are made of.
func word(key, val string) (string, error) {
	for _, c := range val {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "", fmt.Errorf("%s=%q: want letters, digits, '_', '-' or '.'", key, val)
		}
	}
	return val, nil
}

// fieldName accepts a JSON object key the script can name.
func fieldName(val string) (string, error) {
	if len(val) > 128 {
		return "", fmt.Errorf("omit_field=%q: longer than 128 bytes", val)
	}
	return val, nil
}

// toolName accepts what OpenAI and Anthropic accept as a function name.
func toolName(val string) (string, error) {
	if len(val) > 64 {
		return "", fmt.Errorf("tool=%q: longer than 64 bytes", val)
	}
	for _, c := range val {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", fmt.Errorf("tool=%q: want a-z, A-Z, 0-9, '_' or '-'", val)
		}
	}
	return val, nil
}

func jsonObject(val string) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(val)); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return "", fmt.Errorf("args=%q: want a JSON object", val)
	}
	return buf.String(), nil
}

// String renders the script in canonical form (fixed item order); parsing
// the result yields an equal Script.
func (sc *Script) String() string {
	if sc == nil {
		return ""
	}
	var items []string
	add := func(k string, v any) { items = append(items, fmt.Sprintf("%s=%v", k, v)) }
	if sc.status != 0 {
		add("status", sc.status)
	}
	if sc.errorType != "" {
		add("error_type", sc.errorType)
	}
	if sc.errorCode != "" {
		add("error_code", sc.errorCode)
	}
	if sc.message != "" {
		add("message", sc.message)
	}
	if sc.retryAfter >= 0 {
		add("retry_after", sc.retryAfter)
	}
	if sc.retryMS >= 0 {
		add("retry_after_ms", sc.retryMS)
	}
	if sc.delay > 0 {
		add("delay", sc.delay)
	}
	if sc.stall {
		items = append(items, "stall")
	}
	if sc.after != afterNone {
		add(afterKeys[sc.after], sc.afterK)
	}
	if sc.noTerminal {
		items = append(items, "no_terminal")
	}
	if sc.refusal {
		items = append(items, "refusal")
	}
	if sc.eventDelay > 0 {
		add("event_delay", sc.eventDelay)
	}
	if sc.omitField != "" {
		add("omit_field", sc.omitField)
	}
	if sc.tokens >= 0 {
		add("tokens", sc.tokens)
	}
	if sc.cached > 0 {
		add("cached", sc.cached)
	}
	if sc.tool != "" {
		add("tool", sc.tool)
	}
	if sc.tools > 0 {
		add("tools", sc.tools)
	}
	if sc.args != "" {
		add("args", sc.args)
	}
	if sc.p != 1 {
		add("p", strconv.FormatFloat(sc.p, 'g', -1, 64))
	}
	if sc.times > 0 {
		add("times", sc.times)
	}
	return strings.Join(items, ";")
}

// healthyScript is the script of a request with no fault and default shape.
func healthyScript() *Script { return &Script{retryAfter: -1, retryMS: -1, tokens: -1, p: 1} }

// healthy returns the script with its fault part removed: what a request
// gets when p= rolled against the fault. Shaping items stay.
func (sc *Script) healthy() *Script {
	h := healthyScript()
	h.tokens, h.cached, h.tool, h.tools, h.args = sc.tokens, sc.cached, sc.tool, sc.tools, sc.args
	return h
}
