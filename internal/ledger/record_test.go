package ledger

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
	"time"
)

// recordCases are the codec's table: edge values of every field kind.
func recordCases() []record {
	at := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
	full := &Settlement{
		Request: Request{RequestID: "69019ca84b267c506431a2ff", Org: "acme", Team: "search", KeyID: "key_a",
			PublicModel: "claude-sonnet-4-5", ExactModel: "claude-sonnet-4-5", Deployment: "bedrock-us",
			RouteDepth: 1, Attempts: 2, Status: StatusOK, FailureClass: "", InputTokens: 1200, OutputTokens: 300,
			CachedTokens: 64, CostMicroUSD: 8100, CostStatus: CostPriced, ReservedMicroUSD: 960_045, Streamed: true,
			FirstTokenMS: 420, LatencyMS: 2900, StartedAt: at, FinishedAt: at.Add(2900 * time.Millisecond), Exercise: true},
		Attempts: []Attempt{
			{RequestID: "69019ca84b267c506431a2ff", Seq: 0, Deployment: "anthropic", FailureClass: "provider_unavailable",
				HTTPStatus: 529, DurationMS: 240, StartedAt: at},
			{RequestID: "69019ca84b267c506431a2ff", Seq: 1, Deployment: "bedrock-us", HTTPStatus: 200, InputTokens: 1200,
				OutputTokens: 300, CostMicroUSD: 8100, FirstByteMS: 180, DurationMS: 1900, StartedAt: at.Add(240 * time.Millisecond)},
		},
	}
	return []record{
		// Unhappy shapes first: nothing set, nothing served, odd values.
		{res: Reservation{CreatedAt: time.Time{}}},
		{set: &Settlement{Request: Request{RequestID: "r-none", RouteDepth: -1, Status: StatusFailed,
			FailureClass: "provider_unavailable", CostStatus: CostNone}}},
		{set: &Settlement{Request: Request{RequestID: "ünïcode ✓", Org: "o\x00rg", CostMicroUSD: -5,
			InputTokens: 1 << 40, StartedAt: time.UnixMicro(-1).UTC(), FinishedAt: time.UnixMicro(1 << 55).UTC()}}},
		{res: Reservation{RequestID: "r1", KeyID: "key_a", Org: "acme", Team: "search", PublicModel: "sonnet",
			AmountMicro: 960_045, CreatedAt: at}},
		{set: full},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for i, want := range recordCases() {
		var b []byte
		if want.set != nil {
			b = appendSettlement(b, want.set)
		} else {
			b = appendReservation(b, &want.res)
		}
		var got []record
		if n := decodeRecords(b, func(r *record) { got = append(got, *r) }); n != len(b) {
			t.Fatalf("case %d: decoded %d of %d bytes", i, n, len(b))
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("case %d:\n got %+v\nwant %+v", i, got, want)
			if len(got) == 1 && got[0].set != nil {
				t.Errorf("settlement got %+v\nwant %+v", *got[0].set, *want.set)
			}
		}
	}
}

// TestTornTail cuts a segment body at every byte: a kill mid-write leaves a
// prefix of the last write, and exactly the whole records before the cut
// come back, never a partial one.
func TestTornTail(t *testing.T) {
	var body []byte
	var ends []int // where each record ends
	for _, r := range recordCases() {
		if r.set != nil {
			body = appendSettlement(body, r.set)
		} else {
			body = appendReservation(body, &r.res)
		}
		ends = append(ends, len(body))
	}
	for cut := 0; cut <= len(body); cut++ {
		whole := 0
		for _, e := range ends {
			if e <= cut {
				whole++
			}
		}
		got := 0
		n := decodeRecords(body[:cut], func(*record) { got++ })
		if got != whole || (whole > 0 && n != ends[whole-1]) || (whole == 0 && n != 0) {
			t.Fatalf("cut at %d: %d records over %d bytes, want %d", cut, got, n, whole)
		}
	}
	// Damage: a flipped byte in a record's payload or header ends the
	// segment before that record.
	for _, at := range []int{ends[1] + 3, ends[1] + frameHeader + 2, len(body) - 1} {
		bad := bytes.Clone(body)
		bad[at] ^= 0x40
		got := 0
		decodeRecords(bad, func(*record) { got++ })
		want := 0
		for _, e := range ends {
			if e <= at {
				want++
			}
		}
		if got != want {
			t.Errorf("byte %d flipped: %d records, want the %d before it", at, got, want)
		}
	}
}

// TestDecodeRefusesMalformedPayloads: a frame whose checksum holds but whose
// payload does not decode (an unknown kind, trailing bytes, an absurd
// count) ends the segment too.
func TestDecodeRefusesMalformedPayloads(t *testing.T) {
	frame := func(p []byte) []byte {
		b, start := beginFrame(nil)
		b = append(b, p...)
		return endFrame(b, start)
	}
	good := appendReservation(nil, &Reservation{RequestID: "r"})
	empty := appendSettlement(nil, &Settlement{})[frameHeader:]
	// An empty settlement's payload ends with its attempt count (0).
	hugeCount := append(bytes.Clone(empty[:len(empty)-1]), binary.AppendUvarint(nil, 1<<40)...)
	// Byte 18 is Streamed: after the kind, 7 empty strings and 10 one-byte
	// zero fields.
	badBool := appendSettlement(nil, &Settlement{Request: Request{Streamed: true}})[frameHeader:]
	if badBool[18] != 1 {
		t.Fatal("the Streamed byte moved")
	}
	badBool[18] = 7
	unknownFlag := append(bytes.Clone(empty), 2)
	zeroFlags := append(bytes.Clone(empty), 0)
	for name, p := range map[string][]byte{
		"unknown flag":      unknownFlag,
		"zero flags":        zeroFlags,
		"unknown kind":      {9, 0},
		"trailing bytes":    append(bytes.Clone(good[frameHeader:]), 0),
		"string past end":   {recReservation, 50, 'a'},
		"too many attempts": hugeCount,
		"bool not 0 or 1":   badBool,
	} {
		n := decodeRecords(append(frame(p), good...), func(*record) { t.Errorf("%s: decoded a record", name) })
		if n != 0 {
			t.Errorf("%s: consumed %d bytes", name, n)
		}
	}
}

// BenchmarkAppendRecords is the journal's encoding cost per request on the
// request path: a reservation and a one-attempt settlement.
func BenchmarkAppendRecords(b *testing.B) {
	r, s := benchRows()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendReservation(buf[:0], &r)
		buf = appendSettlement(buf, s)
	}
	b.SetBytes(int64(len(buf)))
}

// reencode checks that records decoded from fuzzed bytes survive a round
// trip: encoded again (canonically) and decoded, they are the same records.
// (The bytes themselves may differ: a varint may arrive overlong.)
func reencode(t *testing.T, recs []record) {
	t.Helper()
	var b []byte
	for i := range recs {
		if recs[i].set != nil {
			b = appendSettlement(b, recs[i].set)
		} else {
			b = appendReservation(b, &recs[i].res)
		}
	}
	var again []record
	if n := decodeRecords(b, func(r *record) { again = append(again, *r) }); n != len(b) {
		t.Fatalf("re-encoded records decode %d of %d bytes", n, len(b))
	}
	if !reflect.DeepEqual(again, recs) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", again, recs)
	}
}

// FuzzDecodeRecords: any bytes decode without panicking into whole records
// only, which survive a round trip.
func FuzzDecodeRecords(f *testing.F) {
	for _, r := range recordCases() {
		if r.set != nil {
			f.Add(appendSettlement(nil, r.set))
		} else {
			f.Add(appendReservation(nil, &r.res))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []record
		n := decodeRecords(data, func(r *record) { recs = append(recs, *r) })
		if n < 0 || n > len(data) {
			t.Fatalf("consumed %d of %d bytes", n, len(data))
		}
		reencode(t, recs)
	})
}

// FuzzRecordRoundTrip: every settlement the fuzzer builds comes back equal.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("r1", "acme", "ok", int64(8100), int64(1200), 2, true, int64(1772359200000000))
	f.Add("", "", "", int64(-1), int64(0), 0, false, int64(-62135596800000000))
	f.Fuzz(func(t *testing.T, id, org, status string, cost, tokens int64, attempts int, streamed bool, at int64) {
		when := time.UnixMicro(at).UTC()
		s := &Settlement{Request: Request{RequestID: id, Org: org, Status: status, CostMicroUSD: cost,
			InputTokens: int(tokens), Streamed: streamed, StartedAt: when, FinishedAt: when}}
		for i := range attempts % 8 {
			s.Attempts = append(s.Attempts, Attempt{RequestID: id, Seq: i, Deployment: org, CostMicroUSD: cost, StartedAt: when})
		}
		b := appendSettlement(nil, s)
		var got *Settlement
		if n := decodeRecords(b, func(r *record) { got = r.set }); n != len(b) || got == nil {
			t.Fatalf("decoded %d of %d bytes", n, len(b))
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
		}
	})
}

// FuzzDecodePayload reaches the payload decoder past the checksum: any
// payload, framed with a valid CRC, decodes into a record that survives a
// round trip, or ends the segment.
func FuzzDecodePayload(f *testing.F) {
	for _, r := range recordCases() {
		if r.set != nil {
			f.Add(appendSettlement(nil, r.set)[frameHeader:])
		} else {
			f.Add(appendReservation(nil, &r.res)[frameHeader:])
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		b, start := beginFrame(nil)
		b = endFrame(append(b, p...), start)
		var recs []record
		n := decodeRecords(b, func(r *record) { recs = append(recs, *r) })
		if n != 0 && n != len(b) {
			t.Fatalf("consumed %d of a %d-byte frame", n, len(b))
		}
		reencode(t, recs)
	})
}
