package fields

import "github.com/spillway-gw/spillway/internal/failure"

// Fields reads an object at p whose members are all known in advance:
// member reads the value of each key it knows and does not touch the
// Reader for any other, which is reported as Unknown at once. Telling a member by whether its
// value was read keeps the unknown case out of every dialect's switch.
//
// The loop is written out, not a closure around Members: it runs for
// every member of every tool, tool call and content part.
func (r *Reader) Fields(p Path, member func(key []byte) *failure.Public) *failure.Public {
	if e := r.Object(p); e != nil {
		return e
	}
	for first := true; ; first = false {
		key, ok, e := r.NextKey(first)
		if e != nil || !ok {
			return e
		}
		// Every value is at least one byte long, so a read moves on; a
		// member that does not know key leaves the scanner alone.
		at := r.s.Offset()
		if e := member(key); e != nil {
			return e
		}
		if r.s.Offset() == at {
			return r.w.unknown(&p, key)
		}
	}
}

// Typing says how Typed treats an object's type member and the members
// its reader does not know.
type Typing uint8

const (
	// TypeRequired reports an absent type (Missing) before anything else;
	// without it an absent or null type is given to check as nil.
	TypeRequired Typing = 1 << iota
	// Deferred skips a member the reader does not know and reports it
	// (Unknown) only once check has accepted the type: SDKs often send
	// type last, and a member of another form is best reported as a type
	// this gateway refuses. Without it the member is reported at once.
	Deferred
)

// Typed reads an object at p whose "type" member, a string, says which
// form it is. member reads every other member as in Fields; check judges
// the type once every member is read, so it may weigh members read before
// the type. Errors come in that order: a member's own, the type's absence
// (TypeRequired), check's, then a deferred unknown member (Deferred).
func (r *Reader) Typed(p Path, how Typing, member func(key []byte) *failure.Public, check func(typ []byte) *failure.Public) *failure.Public {
	typ, hasType, other, e := r.typed(&p, how, member)
	switch {
	case e != nil:
		return e
	case !hasType && how&TypeRequired != 0:
		return r.w.Missing(p.F("type"))
	}
	if e := check(typ); e != nil {
		return e
	}
	if other != nil {
		return r.w.unknown(&p, other)
	}
	return nil
}

// typed reads the members of Typed's object: its type, whether a type
// member was given, and the first member left unread, when deferred.
func (r *Reader) typed(p *Path, how Typing, member func(key []byte) *failure.Public) (typ []byte, hasType bool, other []byte, _ *failure.Public) {
	if e := r.Object(*p); e != nil {
		return nil, false, nil, e
	}
	for first := true; ; first = false {
		key, ok, e := r.NextKey(first)
		if e != nil || !ok {
			return typ, hasType, other, e
		}
		if string(key) == "type" {
			hasType = true
			if e := r.typeValue(p, how, &typ); e != nil {
				return nil, false, nil, e
			}
			continue
		}
		at := r.s.Offset()
		if e := member(key); e != nil {
			return nil, false, nil, e
		}
		switch {
		case r.s.Offset() != at:
			continue
		case how&Deferred == 0:
			return nil, false, nil, r.w.unknown(p, key)
		case other == nil:
			other = key
		}
		if e := r.Skip(); e != nil {
			return nil, false, nil, e
		}
	}
}

// typeValue reads the type member of the object at p into typ. Unless the
// type is required, null is as good as absent and leaves typ as it was;
// a required type must be a string.
func (r *Reader) typeValue(p *Path, how Typing, typ *[]byte) *failure.Public {
	if how&TypeRequired == 0 {
		if isNull, e := r.Null(); isNull || e != nil {
			return e
		}
	}
	v, e := r.StrRaw(p.F("type"))
	*typ = v
	return e
}

// unknown reports the member key of the object at p as Unknown. It is kept
// out of line: inlined, its Path temporaries would enlarge the frames of
// the member loops, which run for every object read.
//
//go:noinline
func (w *Wording) unknown(p *Path, key []byte) *failure.Public {
	return w.Unknown(p.F(string(key)))
}
