package server_test

import (
	"strings"
	"testing"
)

// A failover between two different provider kinds of one exact model, in
// every caller dialect, streamed and not: the caller sees one coherent
// answer in its own dialect, served by the second kind.
func TestCrossKindFailover(t *testing.T) {
	pairs := [][2]string{{"anthropic", "bedrock"}, {"openai", "gemini"}, {"gemini", "anthropic"}, {"bedrock", "openai"}}
	for _, d := range dialects {
		for _, pair := range pairs {
			for _, sp := range []spec{{}, {stream: true}, {stream: true, tools: 1}} {
				name := d + " " + pair[0] + "→" + pair[1]
				if sp.stream {
					name += " stream"
				}
				if sp.tools > 0 {
					name += " tools"
				}
				t.Run(name, func(t *testing.T) {
					h := newHarness(t, rungSpec{"p", pair[0]}, rungSpec{"s", pair[1]})
					h.fault("p", "status=529")
					o := call(t, h, d, sp)
					if err := okAnswer(o); err != nil {
						t.Fatal(err)
					}
					if got := hdr(o.resp, "X-Spillway-Trail"); got != "p=provider_unavailable, s=ok" {
						t.Errorf("trail %q", got)
					}
					if sp.tools > 0 {
						if len(o.tools) != 1 || !validArgs(o.tools[0].args) || o.finish != "tool" {
							t.Errorf("tool calls %+v finish %q", o.tools, o.finish)
						}
						return
					}
					if !strings.HasPrefix(o.text, "mock s ") || o.finish != "stop" || o.out != 8 {
						t.Errorf("text %q finish %q out %d: want the secondary's whole answer", o.text, o.finish, o.out)
					}
				})
			}
		}
	}
}
