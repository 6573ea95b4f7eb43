package openairesponses

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// part members, as bits (see the item members in input.go).
const (
	pType uint16 = 1 << iota
	pText
	pRefusal
	pImageURL
	pFileID
	pDetail
	pAnnotations
	pLogprobs
	pCache
	pParsed
)

var partMemberNames = [...]string{"type", "text", "refusal", "image_url", "file_id", "detail", "annotations", "logprobs", "prompt_cache_breakpoint", "parsed"}

const (
	allowInputText  = pType | pText | pCache
	allowOutputText = pType | pText | pAnnotations | pLogprobs | pParsed
	allowRefusal    = pType | pRefusal
	allowImage      = pType | pImageURL | pFileID | pDetail | pCache
)

// decodeContent reads a message's content: a string, or parts allowed for
// the role. A refusal part (assistant history) becomes text: the canonical
// form has no refusal part, and the refusal is what the assistant said.
func decodeContent(v contentValue, role string, cl loc) ([]canonical.Part, *failure.Public) {
	if v.parts == nil {
		return []canonical.Part{canonical.TextPart(v.text)}, nil
	}
	s := sub(v.parts)
	return decodeParts(&s, cl, func(typ []byte, pl loc) *failure.Public {
		switch string(typ) {
		case "input_text":
			return nil
		case "input_image":
			if role == "user" {
				return nil
			}
			return words.Bad(pl.F("type"), "Invalid value for '%s': 'input_image' content parts are only allowed in user messages.", pl.F("type"))
		case "output_text", "refusal":
			if role == "assistant" {
				return nil
			}
			return words.Bad(pl.F("type"), "Invalid value for '%s': '%s' content parts are only allowed in assistant messages.", pl.F("type"), typ)
		}
		return words.Bad(pl.F("type"), "Invalid value for '%s': '%s'. Supported values are: 'input_text', 'input_image' and, in assistant messages, 'output_text' and 'refusal'.", pl.F("type"), typ)
	})
}

// decodeOutput reads a function_call_output's output: a string, or
// input_text and input_image parts.
func decodeOutput(v contentValue, ol loc) ([]canonical.Part, *failure.Public) {
	if v.parts == nil {
		return []canonical.Part{canonical.TextPart(v.text)}, nil
	}
	s := sub(v.parts)
	return decodeParts(&s, ol, func(typ []byte, pl loc) *failure.Public {
		switch string(typ) {
		case "input_text", "input_image":
			return nil
		}
		return words.Bad(pl.F("type"), "Invalid value for '%s': '%s'. Supported values are: 'input_text' and 'input_image'.", pl.F("type"), typ)
	})
}

// decodeParts reads a non-empty array of content parts; allow vets each
// part's type for where it appears.
func decodeParts(s *scanner, cl loc, allow func(typ []byte, pl loc) *failure.Public) ([]canonical.Part, *failure.Public) {
	s.Open() // the caller captured an array, already checked as JSON
	var out []canonical.Part
	if p := s.NonEmpty(cl, func(j int) *failure.Public {
		part, p := decodePart(s, cl.At(j), allow)
		out = append(out, part)
		return p
	}); p != nil {
		return nil, p
	}
	return out, nil
}

func decodePart(s *scanner, pl loc, allow func(typ []byte, pl loc) *failure.Public) (canonical.Part, *failure.Public) {
	var (
		part          canonical.Part
		seen          uint16
		other         string
		typ           []byte
		text, refusal string
		url           string
		hasURL        bool
	)
	if p := s.Members(pl, func(key []byte) (p *failure.Public) {
		switch string(key) {
		case "type":
			seen |= pType
			typ, p = s.StrRaw(pl.F("type"))
		case "text":
			seen |= pText
			text, p = s.Str(pl.F("text"))
		case "refusal":
			seen |= pRefusal
			refusal, p = s.Str(pl.F("refusal"))
		case "image_url":
			seen |= pImageURL
			url, hasURL, p = s.OptStr(pl.F("image_url"))
		case "file_id":
			seen |= pFileID
			var given bool
			if _, given, p = s.OptStr(pl.F("file_id")); p == nil && !given {
				seen &^= pFileID
			}
		case "detail":
			// Tunes the provider's image cost; no canonical counterpart.
			seen |= pDetail
			_, p = s.OptEnum(pl.F("detail"), "auto", "low", "high", "original")
		case "annotations", "logprobs":
			// Output metadata in assistant history; nothing to pass on.
			name := "logprobs"
			if string(key) == "annotations" {
				seen, name = seen|pAnnotations, "annotations"
			} else {
				seen |= pLogprobs
			}
			p = s.OptArray(pl.F(name))
		case "prompt_cache_breakpoint":
			seen |= pCache
			p = s.OptObject(pl.F("prompt_cache_breakpoint"))
		case "parsed":
			// The SDK helpers' parse of the text (responses.parse, the
			// stream helper), echoed with the output; nothing to pass on.
			seen |= pParsed
			p = s.Skip()
		default:
			if other == "" {
				other = string(key)
			}
			p = s.Skip()
		}
		return p
	}); p != nil {
		return part, p
	}
	tl := pl.F("type")
	if seen&pType == 0 {
		return part, words.Missing(tl)
	}
	var mask uint16
	switch string(typ) {
	case "input_text":
		mask = allowInputText
	case "output_text":
		mask = allowOutputText
	case "refusal":
		mask = allowRefusal
	case "input_image":
		mask = allowImage
	case "input_file", "input_audio":
		return part, words.Bad(tl, "Invalid value for '%s': '%s' content parts are not supported by spillway; send text or 'input_image' parts.", tl, typ)
	}
	if p := allow(typ, pl); p != nil {
		return part, p
	}
	if other != "" {
		return part, words.Unknown(pl.F(other))
	}
	if extra := seen &^ mask; extra != 0 {
		for b, name := range partMemberNames {
			if extra&(1<<b) != 0 {
				return part, words.Bad(pl.F(name), "Invalid parameter: '%s' is not allowed on a content part of type '%s'.", pl.F(name), typ)
			}
		}
	}
	switch string(typ) {
	case "input_text", "output_text":
		if seen&pText == 0 {
			return part, words.Missing(pl.F("text"))
		}
		return canonical.TextPart(text), nil
	case "refusal":
		if seen&pRefusal == 0 {
			return part, words.Missing(pl.F("refusal"))
		}
		return canonical.TextPart(refusal), nil
	}
	// input_image
	if seen&pFileID != 0 {
		return part, words.Unsupported(pl.F("file_id"), "spillway does not store files; send the image as 'image_url' (an http(s) URL or a data URL)")
	}
	if !hasURL {
		return part, words.Missing(pl.F("image_url"))
	}
	return imagePart(url, pl.F("image_url"))
}

// imagePart reads an image_url value (see dialect.ImageURLPart).
func imagePart(url string, l loc) (canonical.Part, *failure.Public) {
	part, problem := dialect.ImageURLPart(url)
	if problem != "" {
		return part, words.Bad(l, "Invalid '%s': %s.", l, problem)
	}
	return part, nil
}
