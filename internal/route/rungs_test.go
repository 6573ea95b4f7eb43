package route

import (
	"reflect"
	"testing"
)

// Each route of the table counts its own pool's rungs once, and a rung
// health refuses or the runtime cannot call is not healthy.
func TestHealthyRungs(t *testing.T) {
	snap := planSnap(t)
	h := &fakeHealth{down: map[string]string{"us": "circuit_open", "eu": "throttled"}}
	rd := &fakeReady{missing: map[string]bool{"small": true}}
	got := HealthyRungs(snap, h, rd)
	want := []RungHealth{
		{Route: "frontier", Pool: "extract", Rungs: 1, Healthy: 0},
		{Route: "frontier", Pool: "eu-only", Rungs: 1, Healthy: 0},
		{Route: "frontier", Pool: "all", Rungs: 6, Healthy: 2}, // acme-only, not-globex (unpriced never serves)
		{Route: "strict", Pool: "all", Rungs: 6, Healthy: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HealthyRungs:\n got %+v\nwant %+v", got, want)
	}
	for _, rh := range HealthyRungs(snap, &fakeHealth{}, &fakeReady{}) {
		if want := rh.Rungs - map[string]int{"all": 1}[rh.Pool]; rh.Healthy != want {
			t.Errorf("all healthy: %+v, want %d", rh, want)
		}
	}
}
