package catalog

// This file fixes the API the rest of spillway uses; the implementation
// lives in load.go, validate.go and snapshot.go.

// ResolvedRoute is a route with its pool and deployments looked up.
type ResolvedRoute struct {
	// Public is the name callers use.
	Public string
	Pool   *Pool
	// Deployments are the pool's deployments, in pool order.
	Deployments []*Deployment
	// Match is the route's rules ("*" written as empty).
	Match RouteMatch
	// Index is the route's position in the file's routes; Line its line.
	Index, Line int
	// Fallback is the pool of another exact model tried after Deployments
	// (nil: none); FallbackDeployments its deployments, in pool order.
	Fallback            *Pool
	FallbackDeployments []*Deployment
	// Exercise is the share of eligible requests sent to a secondary
	// rung first (0: none).
	Exercise float64
	// Shed is the route's shedding rule (zero: none); ShedBelow its
	// lowest protected priority.
	Shed      Shed
	ShedBelow Priority
	// StickyTTL is how long a conversation pin lives; 0 when the route
	// does not pin conversations (see Sticky).
	StickyTTL Duration
	// RankCostLatency: the kept rungs are ordered by cache-adjusted cost,
	// then observed first-token latency.
	RankCostLatency bool
	// Hedge is the route's hedge (nil: none); RefusalBuffer its refusal
	// failover's buffer in bytes (0: off).
	Hedge         *Hedge
	RefusalBuffer int
}
