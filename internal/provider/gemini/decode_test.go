package gemini

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// gen renders a GenerateContentResponse (one stream chunk) with one
// candidate.
func gen(parts, finish string) string {
	cand := `{"content":{"parts":[` + parts + `],"role":"model"}`
	if finish != "" {
		cand += `,"finishReason":"` + finish + `"`
	}
	cand += `,"index":0}`
	return `{"candidates":[` + cand + `],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":8,"totalTokenCount":28,"promptTokensDetails":[{"modality":"TEXT","tokenCount":20}]}` +
		`,"modelVersion":"gemini-2.5-flash","responseId":"r-abc123"}`
}

// Every finishReason go-genai knows maps to a stop reason or a failure.
func TestFinishReasons(t *testing.T) {
	tests := []struct {
		reason string
		want   canonical.StopReason // "" = a failure of the attempt
	}{
		{"STOP", canonical.StopEnd},
		{"FINISH_REASON_UNSPECIFIED", canonical.StopEnd},
		{"NO_IMAGE", canonical.StopEnd},
		{"SOMETHING_NEW", canonical.StopEnd},
		{"MAX_TOKENS", canonical.StopMaxTokens},
		{"CONTINUATION", canonical.StopMaxTokens},
		{"SAFETY", canonical.StopContentFilter},
		{"RECITATION", canonical.StopContentFilter},
		{"LANGUAGE", canonical.StopContentFilter},
		{"OTHER", canonical.StopContentFilter},
		{"BLOCKLIST", canonical.StopContentFilter},
		{"PROHIBITED_CONTENT", canonical.StopContentFilter},
		{"SPII", canonical.StopContentFilter},
		{"IMAGE_SAFETY", canonical.StopContentFilter},
		{"IMAGE_PROHIBITED_CONTENT", canonical.StopContentFilter},
		{"IMAGE_RECITATION", canonical.StopContentFilter},
		{"IMAGE_OTHER", canonical.StopContentFilter},
		{"MALFORMED_FUNCTION_CALL", ""},
		{"UNEXPECTED_TOOL_CALL", ""},
		{"TOO_MANY_TOOL_CALLS", ""},
	}
	for _, tt := range tests {
		st := newStream(nopCloser(chunks(gen(`{"text":"x"}`, tt.reason))))
		evs, err := drain(t, st)
		if tt.want == "" {
			if fe := failure.As(err); fe == nil || fe.Class != failure.ProviderUnavailable || !strings.Contains(fe.Detail, tt.reason) {
				t.Errorf("%s: %v, want provider_unavailable naming the reason", tt.reason, err)
			}
			continue
		}
		if !isEOF(err) || evs[len(evs)-1].Kind != canonical.EventStop || evs[len(evs)-1].Stop != tt.want {
			t.Errorf("%s: %+v %v, want %s", tt.reason, evs, err, tt.want)
		}
	}
}

func TestCallIDs(t *testing.T) {
	a, b := callID("", "resp-1", 0), callID("", "resp-1", 1)
	if a == b || a != callID("", "resp-1", 0) || a == callID("", "resp-2", 0) {
		t.Errorf("ids %q %q: want stable per response, distinct per call and per response", a, b)
	}
	if strings.Contains(a, "resp-1") || !strings.HasPrefix(a, "call_") {
		t.Errorf("id %q shows the response id or lacks the call_ prefix", a)
	}
	if got := callID("", "", 3); got != "call_3" {
		t.Errorf("without a response id: %q", got)
	}
	if got := callID("g-1", "resp-1", 0); got != "g-1" {
		t.Errorf("Gemini's own id replaced: %q", got)
	}
}
