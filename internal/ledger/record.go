package ledger

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"
)

// Journal records: each is framed as
//
//	uint32 LE payload length | uint32 LE CRC-32C of the payload | payload
//
// and the payload is a kind byte followed by the row's fields in a fixed
// order: strings as a uvarint length and the bytes, integers as zigzag
// varints, times as zigzag varint microseconds since the Unix epoch (the
// precision the stores keep), booleans as one byte. A frame whose length or
// checksum does not hold is where a segment ends: a write cut short by a
// crash (its Settle never returned) or damage after it.
const (
	frameHeader = 8
	// maxRecord bounds one payload, so that a damaged length never makes
	// the reader allocate much; real records are a few hundred bytes.
	maxRecord = 1 << 20

	recReservation byte = 1
	recSettlement  byte = 2
)

// castagnoli is CRC-32C's table (hardware-accelerated on amd64 and arm64).
// It is computed once and only read.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errRecord marks a payload that does not decode; the reader stops at it.
var errRecord = errors.New("ledger: malformed journal record")

// appendReservation appends r's framed record to b.
func appendReservation(b []byte, r *Reservation) []byte {
	b, start := beginFrame(b)
	b = append(b, recReservation)
	b = appendString(b, r.RequestID)
	b = appendString(b, r.KeyID)
	b = appendString(b, r.Org)
	b = appendString(b, r.Team)
	b = appendString(b, r.PublicModel)
	b = binary.AppendVarint(b, r.AmountMicro)
	b = appendTime(b, r.CreatedAt)
	return endFrame(b, start)
}

// appendSettlement appends s's framed record to b.
func appendSettlement(b []byte, s *Settlement) []byte {
	b, start := beginFrame(b)
	b = append(b, recSettlement)
	r := &s.Request
	for _, v := range [...]string{r.RequestID, r.Org, r.Team, r.KeyID, r.PublicModel, r.ExactModel, r.Deployment} {
		b = appendString(b, v)
	}
	b = binary.AppendVarint(b, int64(r.RouteDepth))
	b = binary.AppendVarint(b, int64(r.Attempts))
	b = appendString(b, r.Status)
	b = appendString(b, r.FailureClass)
	b = binary.AppendVarint(b, int64(r.InputTokens))
	b = binary.AppendVarint(b, int64(r.OutputTokens))
	b = binary.AppendVarint(b, int64(r.CachedTokens))
	b = binary.AppendVarint(b, r.CostMicroUSD)
	b = appendString(b, r.CostStatus)
	b = binary.AppendVarint(b, r.ReservedMicroUSD)
	b = appendBool(b, r.Streamed)
	b = binary.AppendVarint(b, r.FirstTokenMS)
	b = binary.AppendVarint(b, r.LatencyMS)
	b = appendTime(b, r.StartedAt)
	b = appendTime(b, r.FinishedAt)
	b = binary.AppendUvarint(b, uint64(len(s.Attempts)))
	for i := range s.Attempts {
		a := &s.Attempts[i]
		b = binary.AppendVarint(b, int64(a.Seq))
		b = appendString(b, a.Deployment)
		b = appendString(b, a.FailureClass)
		b = binary.AppendVarint(b, int64(a.HTTPStatus))
		b = binary.AppendVarint(b, int64(a.InputTokens))
		b = binary.AppendVarint(b, int64(a.OutputTokens))
		b = binary.AppendVarint(b, a.CostMicroUSD)
		b = binary.AppendVarint(b, a.FirstByteMS)
		b = binary.AppendVarint(b, a.DurationMS)
		b = appendTime(b, a.StartedAt)
	}
	if f := settlementFlags(r); f != 0 {
		b = binary.AppendUvarint(b, f)
	}
	return endFrame(b, start)
}

// A settlement's flags follow its attempts, only when some is set: a
// record without them (all those written before flags existed) reads as
// all clear.
const (
	flagExercise uint64 = 1 << iota
	knownFlags          = flagExercise
)

func settlementFlags(r *Request) uint64 {
	var f uint64
	if r.Exercise {
		f |= flagExercise
	}
	return f
}

func beginFrame(b []byte) ([]byte, int) {
	start := len(b)
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0), start
}

// endFrame fills in the header of the frame that starts at start.
func endFrame(b []byte, start int) []byte {
	p := b[start+frameHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(p)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(p, castagnoli))
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte { return binary.AppendVarint(b, t.UnixMicro()) }

// record is one decoded journal record: a reservation or (set non-nil) a
// settlement.
type record struct {
	res Reservation
	set *Settlement
}

// decodeRecords decodes the frames of a segment's body, calling fn for
// each in order. It stops at the first frame that is cut short or fails its
// checksum or does not decode, and returns how many bytes it consumed: the
// rest of data (len(data)-n bytes) is not a whole, valid record.
func decodeRecords(data []byte, fn func(*record)) (n int) {
	for {
		rest := data[n:]
		if len(rest) < frameHeader {
			return n
		}
		size := binary.LittleEndian.Uint32(rest)
		if size == 0 || size > maxRecord || uint64(size) > uint64(len(rest)-frameHeader) {
			return n
		}
		p := rest[frameHeader : frameHeader+int(size)]
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(rest[4:]) {
			return n
		}
		var rec record
		if err := decodePayload(p, &rec); err != nil {
			return n
		}
		fn(&rec)
		n += frameHeader + int(size)
	}
}

// decodePayload decodes one record's payload into rec.
func decodePayload(p []byte, rec *record) error {
	d := decoder{b: p[1:]}
	switch p[0] {
	case recReservation:
		r := &rec.res
		r.RequestID = d.string()
		r.KeyID = d.string()
		r.Org = d.string()
		r.Team = d.string()
		r.PublicModel = d.string()
		r.AmountMicro = d.varint()
		r.CreatedAt = d.time()
	case recSettlement:
		s := &Settlement{}
		r := &s.Request
		for _, v := range [...]*string{&r.RequestID, &r.Org, &r.Team, &r.KeyID, &r.PublicModel, &r.ExactModel, &r.Deployment} {
			*v = d.string()
		}
		r.RouteDepth = d.int()
		r.Attempts = d.int()
		r.Status = d.string()
		r.FailureClass = d.string()
		r.InputTokens = d.int()
		r.OutputTokens = d.int()
		r.CachedTokens = d.int()
		r.CostMicroUSD = d.varint()
		r.CostStatus = d.string()
		r.ReservedMicroUSD = d.varint()
		r.Streamed = d.bool()
		r.FirstTokenMS = d.varint()
		r.LatencyMS = d.varint()
		r.StartedAt = d.time()
		r.FinishedAt = d.time()
		n := d.uvarint()
		// Every attempt takes at least 10 bytes: a damaged count cannot
		// make the reader allocate more than the payload justifies.
		if d.err == nil && n > uint64(len(d.b))/10 {
			return errRecord
		}
		if n > 0 {
			s.Attempts = make([]Attempt, n)
		}
		for i := range s.Attempts {
			a := &s.Attempts[i]
			a.RequestID = r.RequestID
			a.Seq = d.int()
			a.Deployment = d.string()
			a.FailureClass = d.string()
			a.HTTPStatus = d.int()
			a.InputTokens = d.int()
			a.OutputTokens = d.int()
			a.CostMicroUSD = d.varint()
			a.FirstByteMS = d.varint()
			a.DurationMS = d.varint()
			a.StartedAt = d.time()
		}
		if d.err == nil && len(d.b) > 0 {
			// Zero flags are never written; unknown ones are damage.
			f := d.uvarint()
			if f == 0 || f&^knownFlags != 0 {
				return errRecord
			}
			r.Exercise = f&flagExercise != 0
		}
		rec.set = s
	default:
		return errRecord
	}
	if d.err != nil || len(d.b) != 0 {
		return errRecord
	}
	return nil
}

// decoder reads payload fields; the first error sticks and every later
// read returns a zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int { return int(d.varint()) }

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errRecord
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 || d.b[0] > 1 {
		d.err = errRecord
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

func (d *decoder) time() time.Time { return time.UnixMicro(d.varint()).UTC() }
