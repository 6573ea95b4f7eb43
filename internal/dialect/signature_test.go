package dialect

import (
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

func TestSignatures(t *testing.T) {
	for _, f := range []canonical.Family{canonical.FamilyClaude, canonical.FamilyGemini} {
		enc := EncodeSignature("c2ln", f)
		sig, fam := DecodeSignature(enc)
		if sig != "c2ln" || fam != f {
			t.Errorf("%s: %q decodes to %q %q", f, enc, sig, fam)
		}
	}
	if EncodeSignature("raw", canonical.FamilyClaude) != "raw" {
		t.Error("a Claude signature is not handed out unchanged")
	}
	if sig, fam := DecodeSignature("EqQBCgIYAhIM"); sig != "EqQBCgIYAhIM" || fam != canonical.FamilyClaude {
		t.Errorf("an unmarked signature: %q %q", sig, fam)
	}
	for _, p := range []canonical.Part{
		{Type: canonical.PartThinking, Text: "t", Signature: "s:with:colons", Family: canonical.FamilyClaude},
		{Type: canonical.PartRedactedThinking, Data: "d", Family: canonical.FamilyGemini},
	} {
		got, ok := ReadReasoning(MarkReasoning(p), p.Text)
		if !ok || got != p {
			t.Errorf("%+v round-trips to %+v %v", p, got, ok)
		}
	}
	for _, s := range []string{"", "gAAAAB", "spw:", "spw::x", "spw:claude"} {
		if _, ok := ReadReasoning(s, ""); ok {
			t.Errorf("%q read as spillway's", s)
		}
	}
}

func FuzzReadReasoning(f *testing.F) {
	f.Add("spw:claude:abc", "text")
	f.Add("spw:gemini/redacted:zz", "")
	f.Fuzz(func(t *testing.T, s, text string) {
		p, ok := ReadReasoning(s, text)
		if !ok {
			return
		}
		if back, ok2 := ReadReasoning(MarkReasoning(p), p.Text); !ok2 || back != p {
			t.Fatalf("%q: %+v does not round-trip (%+v)", s, p, back)
		}
	})
}
