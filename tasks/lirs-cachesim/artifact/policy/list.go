package policy

// A small intrusive doubly linked list; container/list allocates an
// interface per element and was ~30% slower on the MSR traces.

type node struct {
	key        Key
	prev, next *node
	// which list the node is on (policy specific tag)
	where int8
	// LIRS only
	lir      bool
	resident bool
	qprev    *node
	qnext    *node
	inS      bool
	inQ      bool
}

type dlist struct {
	head, tail *node // head = most recent
	n          int
}

func (l *dlist) pushFront(x *node) {
	x.prev = nil
	x.next = l.head
	if l.head != nil {
		l.head.prev = x
	}
	l.head = x
	if l.tail == nil {
		l.tail = x
	}
	l.n++
}

func (l *dlist) remove(x *node) {
	if x.prev != nil {
		x.prev.next = x.next
	} else {
		l.head = x.next
	}
	if x.next != nil {
		x.next.prev = x.prev
	} else {
		l.tail = x.prev
	}
	x.prev, x.next = nil, nil
	l.n--
}

func (l *dlist) moveToFront(x *node) {
	if l.head == x {
		return
	}
	l.remove(x)
	l.pushFront(x)
}

// queue threaded through qprev/qnext (LIRS resident-HIR queue)
type dqueue struct {
	head, tail *node // head = oldest (next victim), tail = newest
	n          int
}

func (q *dqueue) pushBack(x *node) {
	x.qnext = nil
	x.qprev = q.tail
	if q.tail != nil {
		q.tail.qnext = x
	}
	q.tail = x
	if q.head == nil {
		q.head = x
	}
	x.inQ = true
	q.n++
}

func (q *dqueue) remove(x *node) {
	if x.qprev != nil {
		x.qprev.qnext = x.qnext
	} else {
		q.head = x.qnext
	}
	if x.qnext != nil {
		x.qnext.qprev = x.qprev
	} else {
		q.tail = x.qprev
	}
	x.qprev, x.qnext = nil, nil
	x.inQ = false
	q.n--
}
