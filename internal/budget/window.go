package budget

import "time"

// windowSecs is the width of the RPM/TPM window in one-second slots.
const windowSecs = 60

type slot struct {
	sec          int64 // the Unix second this slot counts; stale slots hold zero counts
	reqs, tokens int64
}

// window is a sliding 60 s count of requests and tokens: a ring of
// per-second slots with running sums, so reading it is O(1) and moving it
// costs at most one step per elapsed second. The owner serialises access.
type window struct {
	last         int64 // newest second seen; the window is (last-60, last]
	reqs, tokens int64 // sums over the live slots
	s            [windowSecs]slot
}

func idx(sec int64) int {
	i := int(sec % windowSecs)
	if i < 0 {
		i += windowSecs
	}
	return i
}

// advance moves the window to sec, expiring the slots that fell out. A
// clock that steps back does not rewind it: counts stay in the newest slot.
func (w *window) advance(sec int64) {
	if sec <= w.last {
		return
	}
	if sec-w.last >= windowSecs {
		w.s = [windowSecs]slot{}
		w.reqs, w.tokens, w.last = 0, 0, sec
		return
	}
	for s := w.last + 1; s <= sec; s++ {
		sl := &w.s[idx(s)]
		w.reqs -= sl.reqs
		w.tokens -= sl.tokens
		*sl = slot{sec: s}
	}
	w.last = sec
}

// add counts reqs and tokens in second sec, or in the newest second when sec
// is no longer in the window (the clock stepped back).
func (w *window) add(sec, reqs, tokens int64) {
	if sec <= w.last-windowSecs || sec > w.last {
		sec = w.last
	}
	sl := &w.s[idx(sec)]
	sl.sec = sec
	sl.reqs += reqs
	sl.tokens = addSat(sl.tokens, tokens)
	w.reqs += reqs
	w.tokens = addSat(w.tokens, tokens)
}

// correct moves the tokens counted at sec by delta, if that second is still
// in the window; a count never goes below zero.
func (w *window) correct(sec, delta int64) {
	if delta == 0 || sec <= w.last-windowSecs || sec > w.last {
		return
	}
	sl := &w.s[idx(sec)]
	if sl.sec != sec {
		return
	}
	if sl.tokens+delta < 0 {
		delta = -sl.tokens
	}
	sl.tokens += delta
	w.tokens += delta
}

// freeIn is how long from now until at least need requests (tokens=false)
// or tokens (tokens=true) have left the window; 0 if they never will.
func (w *window) freeIn(now time.Time, need int64, tokens bool) time.Duration {
	if need <= 0 {
		return 0
	}
	var freed int64
	for s := w.last - windowSecs + 1; s <= w.last; s++ {
		sl := &w.s[idx(s)]
		if sl.sec != s {
			continue
		}
		if tokens {
			freed += sl.tokens
		} else {
			freed += sl.reqs
		}
		if freed >= need {
			return max(time.Unix(s+windowSecs, 0).Sub(now), time.Nanosecond)
		}
	}
	return 0
}
