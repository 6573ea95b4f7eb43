package dialect

import (
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

func TestImageURLPart(t *testing.T) {
	tests := []struct {
		url       string
		want      canonical.Part
		wantIssue bool
	}{
		{"", canonical.Part{}, true},
		{"https://", canonical.Part{}, true},
		{"HTTP://", canonical.Part{}, true},
		{"ftp://example.com/a.png", canonical.Part{}, true},
		{"data:image/png,AAAA", canonical.Part{}, true},                                      // not base64
		{"data:image/;base64,AAAA", canonical.Part{}, true},                                  // no subtype
		{"data:text/plain;base64,AAAA", canonical.Part{}, true},                              // not an image
		{"data:image/png;base64,AAA", canonical.Part{}, true},                                // bad padding
		{"data:image/png;base64,A*==", canonical.Part{}, true},                               // bad alphabet
		{"http://x", canonical.Part{Type: canonical.PartImage, ImageURL: "http://x"}, false}, // a one-letter host is a host
		{"HTTPS://example.com/a.png", canonical.Part{Type: canonical.PartImage, ImageURL: "HTTPS://example.com/a.png"}, false},
		{"data:IMAGE/PNG;base64,iVBORw==", canonical.Part{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw=="}, false},
	}
	for _, tt := range tests {
		got, issue := ImageURLPart(tt.url)
		if (issue != "") != tt.wantIssue || got != tt.want {
			t.Errorf("ImageURLPart(%q) = %+v, %q", tt.url, got, issue)
		}
	}
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"get_weather": true, "a-B_9": true, "": false, "has space": false, "dot.name": false,
		"x234567890123456789012345678901234567890123456789012345678901234":  true,
		"x2345678901234567890123456789012345678901234567890123456789012345": false,
	} {
		if got := ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v", name, got)
		}
	}
}
