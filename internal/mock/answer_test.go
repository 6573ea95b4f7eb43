package mock

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPieces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"mock", []string{"mock"}},
		{" primary", []string{" pri", "mary"}},
		{`{"city":"Paris"}`, []string{`{"ci`, `ty":`, `"Par`, `is"}`}},
		{"héllo", []string{"hél", "lo"}}, // é is 2 bytes
		{"日本語", []string{"日", "本", "語"}}, // 3 bytes each: never split
		{"a😀b", []string{"a", "😀", "b"}}, // 4-byte rune alone
	}
	for _, tc := range tests {
		got := pieces(tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("pieces(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, p := range got {
			if len(p) > 4 || !utf8.ValidString(p) {
				t.Errorf("pieces(%q): bad piece %q", tc.in, p)
			}
		}
	}
}

func TestTextTokens(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		prefix string
	}{
		{"primary", 8, "mock primary lorem"},
		{"a", 4, "mock a lorem"},
		{"", 4, "mock mock lor"},
		{"two words", 5, "mock two words"},
		{"longer-than-budget", 2, "mock lon"},
		{"x", 0, ""},
	}
	for _, tc := range tests {
		got := textTokens(tc.name, tc.n)
		if len(got) != tc.n || !strings.HasPrefix(strings.Join(got, ""), tc.prefix) {
			t.Errorf("textTokens(%q, %d) = %q, want %d tokens starting %q", tc.name, tc.n, got, tc.n, tc.prefix)
		}
	}
}

// The gateway estimates delivered tokens as one per content delta, so every
// answer's usage must report exactly as many output tokens as it streams
// content deltas, and the non-streaming answer the same count.
func TestUsageEqualsContentDeltas(t *testing.T) {
	tests := []struct {
		name, fault, extra string
		kinds              []string
		want               int // content deltas; -1: do not check the number
		stop               map[string]string
	}{
		{name: "default", want: defaultTokens, stop: map[string]string{"openai": "stop", "anthropic": "end_turn"}},
		{name: "tokens=1", fault: "tokens=1", want: 1},
		{name: "tokens=0", fault: "tokens=0", want: 0, stop: map[string]string{"openai": "stop", "anthropic": "end_turn"}},
		{name: "tokens=37", fault: "tokens=37", want: 37},
		{name: "cached", fault: "cached=9;tokens=5", want: 5},
		{name: "tool", extra: toolsField("openai", "get_weather"), kinds: []string{"openai"}, want: len(pieces(defaultArgs)),
			stop: map[string]string{"openai": "tool_calls"}},
		{name: "tool", extra: toolsField("anthropic", "get_weather"), kinds: []string{"anthropic"}, want: len(pieces(defaultArgs)),
			stop: map[string]string{"anthropic": "tool_use"}},
		{name: "tools=3 args", fault: `tools=3;args={"q":"Straße 5, 東京"}`, extra: toolsField("openai", "a", "b"), kinds: []string{"openai"},
			want: 3 * len(pieces(`{"q":"Straße 5, 東京"}`))},
		{name: "tools=3 args", fault: `tools=3;args={"q":"Straße 5, 東京"}`, extra: toolsField("anthropic", "a", "b"), kinds: []string{"anthropic"},
			want: 3 * len(pieces(`{"q":"Straße 5, 東京"}`))},
		{name: "refusal", fault: "refusal", kinds: []string{"openai"}, want: len(pieces(defaultRefusal))},
		{name: "refusal", fault: "refusal", kinds: []string{"anthropic"}, want: 0, stop: map[string]string{"anthropic": "refusal"}},
		{name: "refusal after text", fault: "refusal;tokens=4", kinds: []string{"anthropic"}, want: 4},
		{name: "max tokens", extra: `"max_completion_tokens":3`, kinds: []string{"openai"}, want: 3, stop: map[string]string{"openai": "length"}},
		{name: "deprecated max_tokens", extra: `"max_tokens":2`, kinds: []string{"openai"}, want: 2, stop: map[string]string{"openai": "length"}},
		{name: "stop sequence", fault: "tokens=20", extra: `"stop":["dolor"]`, kinds: []string{"openai"}, want: -1, stop: map[string]string{"openai": "stop"}},
		{name: "stop sequence", fault: "tokens=20", extra: `"stop_sequences":["dolor"]`, kinds: []string{"anthropic"}, want: -1,
			stop: map[string]string{"anthropic": "stop_sequence"}},
		{name: "unicode name", want: defaultTokens},
	}
	for _, tc := range tests {
		ks := tc.kinds
		if ks == nil {
			ks = kinds
		}
		for _, kind := range ks {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				name := "primary"
				if tc.name == "unicode name" {
					name = "Zürich-東京"
				}
				m, srv := newMock(t, kind, Options{Name: name})
				hdr := []string{"X-Mock-Fault", tc.fault}
				r := exchange(t, srv, kind, reqBody(kind, true, tc.extra), hdr...)
				if r.status != 200 || r.readErr != nil {
					t.Fatalf("stream: %d %v %s", r.status, r.readErr, r.body)
				}
				evs, err := events(r.body)
				if err != nil {
					t.Fatal(err)
				}
				st := countStream(t, kind, evs)
				if !st.terminal || st.badJSON != 0 {
					t.Fatalf("terminal %v, broken events %d", st.terminal, st.badJSON)
				}
				for _, d := range st.deltas {
					if len(d) > 4 {
						t.Errorf("delta %q longer than 4 bytes", d)
					}
				}
				if st.usageOut != len(st.deltas) || tc.want >= 0 && len(st.deltas) != tc.want {
					t.Errorf("usage %d, content deltas %d, want %d", st.usageOut, len(st.deltas), tc.want)
				}
				if want := (len(m.Requests()[0].Body) + 3) / 4; st.usageIn != want {
					t.Errorf("input %d, want ceil(len(body)/4) = %d", st.usageIn, want)
				}
				if s, ok := tc.stop[kind]; ok && st.stop != s {
					t.Errorf("stop %q, want %q", st.stop, s)
				}

				// Non-streaming: the same count and the same text.
				r = exchange(t, srv, kind, reqBody(kind, false, tc.extra), hdr...)
				out, text := nonStreamUsage(t, kind, r.body)
				if out != len(st.deltas) {
					t.Errorf("non-streaming usage %d, streaming deltas %d", out, len(st.deltas))
				}
				if !strings.Contains(tc.extra, "tools") && !(kind == "openai" && tc.fault == "refusal") {
					if joined := strings.Join(st.deltas, ""); text != joined {
						t.Errorf("non-streaming text %q, streamed %q", text, joined)
					}
				}
				if (tc.name == "default" || tc.name == "unicode name") && !strings.HasPrefix(text, "mock "+name+" ") {
					t.Errorf("text %q does not start with %q", text, "mock "+name+" ")
				}
			})
		}
	}
}

func nonStreamUsage(t *testing.T, kind string, body []byte) (output int, text string) {
	t.Helper()
	if kind == "openai" {
		var b struct {
			Choices []struct {
				Message struct {
					Content *string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Usage struct {
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if c := b.Choices[0].Message.Content; c != nil {
			text = *c
		}
		return b.Usage.Completion, text
	}
	var b struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, c := range b.Content {
		text += c.Text
	}
	return b.Usage.Output, text
}

func TestStopSequenceCutsBeforeTheSequence(t *testing.T) {
	text := textTokens("primary", 20)
	seq, cut, ok := firstStop(text, []string{"zzz", "ipsum", "rem ip"})
	if !ok || seq != "rem ip" {
		t.Fatalf("firstStop: %q %v", seq, ok)
	}
	if got := strings.Join(cut, ""); got != "mock primary lo" {
		t.Errorf("cut text %q", got)
	}
	if _, _, ok := firstStop(text, []string{"", "absent"}); ok {
		t.Error("matched an absent or empty stop sequence")
	}
}
