package policy

// ARC: Adaptive Replacement Cache (Megiddo & Modha, FAST '03), following
// the pseudo code of Fig. 4 of that paper with integer adaptation steps.
type ARC struct {
	c              int
	p              int
	t1, t2, b1, b2 dlist
	m              map[Key]*node
}

const (
	inT1 int8 = iota + 1
	inT2
	inB1
	inB2
)

func NewARC(size int) *ARC { return &ARC{c: size, m: make(map[Key]*node, 2*size)} }

func (a *ARC) Name() string { return "arc" }
func (a *ARC) Len() int     { return a.t1.n + a.t2.n }

// P exposes the adaptation target (for the trace plots in Fig. 5).
func (a *ARC) P() int { return a.p }

func (a *ARC) list(w int8) *dlist {
	switch w {
	case inT1:
		return &a.t1
	case inT2:
		return &a.t2
	case inB1:
		return &a.b1
	}
	return &a.b2
}

func (a *ARC) move(x *node, to int8) {
	a.list(x.where).remove(x)
	x.where = to
	a.list(to).pushFront(x)
}

func (a *ARC) replace(xInB2 bool) {
	if a.t1.n >= 1 && ((xInB2 && a.t1.n == a.p) || a.t1.n > a.p) {
		a.move(a.t1.tail, inB1)
	} else {
		a.move(a.t2.tail, inB2)
	}
}

func (a *ARC) dropLRU(l *dlist) {
	v := l.tail
	l.remove(v)
	delete(a.m, v.key)
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func (a *ARC) Access(k Key) bool {
	x, ok := a.m[k]
	if ok {
		switch x.where {
		case inT1, inT2: // case I
			a.move(x, inT2)
			return true
		case inB1: // case II
			a.p = min(a.c, a.p+max(a.b2.n/a.b1.n, 1))
			a.replace(false)
			a.move(x, inT2)
			return false
		case inB2: // case III
			a.p = max(0, a.p-max(a.b1.n/a.b2.n, 1))
			a.replace(true)
			a.move(x, inT2)
			return false
		}
	}
	// case IV
	l1 := a.t1.n + a.b1.n
	if l1 == a.c {
		if a.t1.n < a.c {
			a.dropLRU(&a.b1)
			a.replace(false)
		} else {
			a.dropLRU(&a.t1)
		}
	} else if l1 < a.c {
		tot := l1 + a.t2.n + a.b2.n
		if tot >= a.c {
			if tot == 2*a.c {
				a.dropLRU(&a.b2)
			}
			a.replace(false)
		}
	}
	x = &node{key: k, where: inT1}
	a.t1.pushFront(x)
	a.m[k] = x
	return false
}
