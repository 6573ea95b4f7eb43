package dialect

// smallIndex is how many keys an Index scans before it builds a map: the
// common request has a few tools and a few calls, where a scan is
// cheapest.
const smallIndex = 16

// Index finds strings among those added, by position, in constant time
// once there are more than a few: tool names, tool-call ids. No list a
// caller can send makes a uniqueness or lookup check quadratic.
type Index struct {
	keys []string
	m    map[string]int
}

// Add appends s and reports its position; when s was already added, the
// earlier position and true.
func (x *Index) Add(s string) (int, bool) {
	if at, ok := x.Find(s); ok {
		return at, true
	}
	x.keys = append(x.keys, s)
	at := len(x.keys) - 1
	switch {
	case x.m != nil:
		x.m[s] = at
	case len(x.keys) > smallIndex:
		x.m = make(map[string]int, 2*len(x.keys))
		for i, k := range x.keys {
			x.m[k] = i
		}
	}
	return at, false
}

// Find reports the position of s.
func (x *Index) Find(s string) (int, bool) {
	if x.m != nil {
		at, ok := x.m[s]
		return at, ok
	}
	for i, k := range x.keys {
		if k == s {
			return i, true
		}
	}
	return 0, false
}

// Len is the number of keys.
func (x *Index) Len() int { return len(x.keys) }

// Reset forgets every key, keeping the storage.
func (x *Index) Reset() {
	x.keys = x.keys[:0]
	x.m = nil
}
