package idempotency

// An entry sits on two intrusive lists at once (recency and expiry), so
// keeping it costs no list node allocation.

const (
	byUse = iota
	byExpiry
)

type links struct{ prev, next *entry }

// list is a doubly linked list threaded through entry.link[i].
type list struct {
	head, tail *entry
	i          int
}

func (l *list) pushFront(e *entry) {
	n := &e.link[l.i]
	n.prev, n.next = nil, l.head
	if l.head != nil {
		l.head.link[l.i].prev = e
	} else {
		l.tail = e
	}
	l.head = e
}

func (l *list) pushBack(e *entry) {
	n := &e.link[l.i]
	n.prev, n.next = l.tail, nil
	if l.tail != nil {
		l.tail.link[l.i].next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *list) remove(e *entry) {
	n := &e.link[l.i]
	if n.prev != nil {
		n.prev.link[l.i].next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.link[l.i].prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

func (l *list) moveToFront(e *entry) {
	if l.head == e {
		return
	}
	l.remove(e)
	l.pushFront(e)
}
