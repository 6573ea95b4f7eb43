package ledger

import "context"

// The writer's tests read nothing back: fakeStore audits nothing.
func (f *fakeStore) RequestRows(context.Context, string, int) ([]Request, error) { return nil, nil }
func (f *fakeStore) AttemptRows(context.Context, AttemptKey, int) ([]Attempt, error) {
	return nil, nil
}
func (f *fakeStore) ReservationStates(context.Context) (ReservationStates, error) {
	return ReservationStates{}, nil
}
