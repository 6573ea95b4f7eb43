package budget

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	base := t0.Unix()
	at := func(s int64) time.Time { return time.Unix(base+s, 0) }
	tests := []struct {
		name       string
		run        func(w *window)
		reqs, toks int64
	}{
		{"empty", func(w *window) { w.advance(base) }, 0, 0},
		{"first use jumps from zero", func(w *window) { w.advance(base); w.add(base, 1, 10) }, 1, 10},
		{"59 s later still counted", func(w *window) {
			w.advance(base)
			w.add(base, 1, 10)
			w.advance(base + 59)
		}, 1, 10},
		{"60 s later expired", func(w *window) {
			w.advance(base)
			w.add(base, 1, 10)
			w.advance(base + 60)
		}, 0, 0},
		{"a long gap clears everything", func(w *window) {
			w.advance(base)
			for s := range int64(30) {
				w.advance(base + s)
				w.add(base+s, 1, 1)
			}
			w.advance(base + 1000)
		}, 0, 0},
		{"step by step keeps the last 60", func(w *window) {
			for s := range int64(100) {
				w.advance(base + s)
				w.add(base+s, 1, 2)
			}
		}, 60, 120},
		{"correct an expired second: ignored", func(w *window) {
			w.advance(base)
			w.add(base, 1, 10)
			w.advance(base + 60)
			w.add(base+60, 1, 5)
			w.correct(base, -10)
		}, 1, 5},
		{"correct a future second: ignored", func(w *window) {
			w.advance(base)
			w.add(base, 1, 10)
			w.correct(base+1, -10)
		}, 1, 10},
		{"correct never below zero", func(w *window) {
			w.advance(base)
			w.add(base, 1, 10)
			w.add(base, 1, 0)
			w.advance(base + 1)
			w.add(base+1, 1, 7) // another second's tokens stay
			w.correct(base, -50)
		}, 3, 7},
		{"correct upward", func(w *window) {
			w.advance(base)
			w.add(base, 1, 10)
			w.advance(base + 3)
			w.correct(base, 15)
		}, 1, 25},
		{"clock back within the window: counted in its own second", func(w *window) {
			w.advance(base + 10)
			w.add(base+4, 1, 3)
			w.advance(base + 64)
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w window
			tt.run(&w)
			if w.reqs != tt.reqs || w.tokens != tt.toks {
				t.Errorf("reqs %d tokens %d, want %d %d", w.reqs, w.tokens, tt.reqs, tt.toks)
			}
			var r, k int64
			for _, s := range w.s {
				r, k = r+s.reqs, k+s.tokens
			}
			if r != w.reqs || k != w.tokens {
				t.Errorf("running sums %d/%d disagree with the slots %d/%d", w.reqs, w.tokens, r, k)
			}
		})
	}

	t.Run("freeIn", func(t *testing.T) {
		var w window
		w.advance(base)
		w.add(base, 2, 100)
		w.advance(base + 30)
		w.add(base+30, 1, 50)
		for _, c := range []struct {
			need   int64
			tokens bool
			want   time.Duration
		}{
			{0, false, 0}, {1, false, 30 * time.Second}, {2, false, 30 * time.Second}, {3, false, 60 * time.Second}, {4, false, 0},
			{100, true, 30 * time.Second}, {101, true, 60 * time.Second}, {151, true, 0},
		} {
			if got := w.freeIn(at(30), c.need, c.tokens); got != c.want {
				t.Errorf("freeIn(%d, tokens=%v) = %v, want %v", c.need, c.tokens, got, c.want)
			}
		}
	})
}
