package engine

// EachFailover calls f for every failover of the request, in dispatch
// order: each attempt that began on another deployment after the attempt
// dispatched just before it had failed with a verdict that moves on (a
// class that fails over, or a refusal the route moves on from). A
// same-rung retry is not a failover, and neither is a hedge: the hedge
// starts while the attempt it races is still running (hedges are counted
// apart); the rung after a failed race is, from the race's later attempt.
// It allocates nothing.
func (r *Result) EachFailover(f func(from, to *Attempt)) {
	as := r.Attempts
	// Attempts are recorded as they finish, which a race reorders: walk
	// them by dispatch (start time, then record order), n² over a
	// handful.
	var prev *Attempt
	prevAt := -1
	for range as {
		next := -1
		for i := range as {
			if (prevAt < 0 || dispatchedBefore(as, prevAt, i)) && (next < 0 || dispatchedBefore(as, i, next)) {
				next = i
			}
		}
		to := &as[next]
		if from := prev; from != nil && from.Err != nil && movesOn(from.Err) && from.Deployment != to.Deployment &&
			!from.Start.Add(from.Duration).After(to.Start) { // one still running when this began is raced: a hedge
			f(from, to)
		}
		prev, prevAt = to, next
	}
}

// dispatchedBefore orders attempts i and j of as by start time, then by
// the order they were recorded in.
func dispatchedBefore(as []Attempt, i, j int) bool {
	a, b := &as[i], &as[j]
	if a.Start.Equal(b.Start) {
		return i < j
	}
	return a.Start.Before(b.Start)
}
