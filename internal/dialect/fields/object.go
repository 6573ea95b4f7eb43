package fields

import "github.com/spillway-gw/spillway/internal/failure"

// Fields reads an object at p whose members are all known in advance:
// member reads the value of each key it knows and leaves any other unread,
// which is reported as Unknown at once. Telling a member by whether its
// value was read keeps the unknown case out of every dialect's switch.
func (r *Reader) Fields(p Path, member func(key []byte) *failure.Public) *failure.Public {
	return r.Members(p, func(key []byte) *failure.Public {
		if read, e := r.member(member, key); read || e != nil {
			return e
		}
		return r.w.Unknown(p.F(string(key)))
	})
}

// member calls member with key and reports whether it read the value.
// Every value is at least one byte long, so a read always moves on.
func (r *Reader) member(member func(key []byte) *failure.Public, key []byte) (bool, *failure.Public) {
	at := r.Mark()
	e := member(key)
	return r.Mark() != at, e
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
	var typ, other []byte
	hasType := false
	e := r.Members(p, func(key []byte) *failure.Public {
		if string(key) == "type" {
			hasType = true
			return r.typeValue(p, how, &typ)
		}
		read, e := r.member(member, key)
		switch {
		case read || e != nil:
			return e
		case how&Deferred == 0:
			return r.w.Unknown(p.F(string(key)))
		case other == nil:
			other = key
		}
		return r.Skip()
	})
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
		return r.w.Unknown(p.F(string(other)))
	}
	return nil
}

// typeValue reads the type member of the object at p into typ. Unless the
// type is required, null is as good as absent and leaves typ as it was;
// a required type must be a string.
func (r *Reader) typeValue(p Path, how Typing, typ *[]byte) *failure.Public {
	if how&TypeRequired == 0 {
		if isNull, e := r.Null(); isNull || e != nil {
			return e
		}
	}
	v, e := r.StrRaw(p.F("type"))
	*typ = v
	return e
}
