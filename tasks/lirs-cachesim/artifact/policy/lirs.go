package policy

// LIRS (Jiang & Zhang, SIGMETRICS '02).
//
// Blocks are LIR (always resident), resident HIR or non-resident HIR.  The
// LIRS stack S holds LIR blocks and HIR blocks (resident or not) whose
// recency is smaller than that of the least recent LIR block; the queue Q
// holds the resident HIR blocks in FIFO order and supplies the victims.

// DefaultHIRFraction is the share of the cache given to resident HIR
// blocks; the original paper uses 1%.
const DefaultHIRFraction = 0.01

type LIRS struct {
	size     int
	lirCap   int
	hirCap   int
	nLIR     int
	resident int
	s        dlist  // head = top (most recent)
	q        dqueue // head = front (next victim)
	m        map[Key]*node
	// NonResidentLimit bounds the non-resident HIR entries kept in S
	// (0 = unbounded, as in the paper).
	NonResidentLimit int
	nNonRes          int
}

func NewLIRS(size int, hirFrac float64) *LIRS {
	h := int(float64(size) * hirFrac)
	if h < 1 {
		h = 1
	}
	return &LIRS{size: size, hirCap: h, lirCap: size - h, m: make(map[Key]*node, 2*size)}
}

func (c *LIRS) Name() string { return "lirs" }
func (c *LIRS) Len() int     { return c.resident }

// prune removes HIR blocks from the bottom of S until a LIR block is there.
func (c *LIRS) prune() {
	for c.s.tail != nil && !c.s.tail.lir {
		x := c.s.tail
		c.s.remove(x)
		x.inS = false
		if !x.resident {
			c.nNonRes--
			delete(c.m, x.key)
		}
	}
}

// demoteBottom turns the LIR block at the bottom of S into a resident HIR
// block at the end of Q.
func (c *LIRS) demoteBottom() {
	y := c.s.tail
	c.s.remove(y)
	y.inS = false
	y.lir = false
	c.nLIR--
	c.q.pushBack(y)
	c.prune()
}

func (c *LIRS) toTop(x *node) {
	if x.inS {
		c.s.moveToFront(x)
	} else {
		c.s.pushFront(x)
		x.inS = true
	}
}

func (c *LIRS) Access(k Key) bool {
	x, ok := c.m[k]
	if ok && x.resident {
		if x.lir {
			wasBottom := c.s.tail == x
			c.s.moveToFront(x)
			if wasBottom {
				c.prune()
			}
			return true
		}
		// resident HIR
		if x.inS {
			x.lir = true
			c.nLIR++
			c.q.remove(x)
			c.s.moveToFront(x)
			c.demoteBottom()
		} else {
			c.toTop(x)
			c.q.remove(x)
			c.q.pushBack(x)
		}
		return true
	}

	// miss: make room for the block
	if c.resident >= c.size {
		v := c.q.head
		c.q.remove(v)
		v.resident = false
		c.resident--
		if v.inS {
			c.nNonRes++
		} else {
			delete(c.m, v.key)
		}
	}
	if !ok {
		x = &node{key: k}
		c.m[k] = x
	} else {
		// non-resident HIR block still in S
		c.nNonRes--
	}
	x.resident = true
	c.resident++

	if c.nLIR < c.lirCap {
		x.lir = true
		c.nLIR++
		c.toTop(x)
		return false
	}
	if x.inS {
		x.lir = true
		c.nLIR++
		c.s.moveToFront(x)
		c.demoteBottom()
	} else {
		c.toTop(x)
		c.q.pushBack(x)
	}
	c.limitNonResident()
	return false
}

// limitNonResident drops the oldest non-resident HIR entries from S when
// NonResidentLimit is set.
func (c *LIRS) limitNonResident() {
	if c.NonResidentLimit <= 0 {
		return
	}
	for x := c.s.tail; x != nil && c.nNonRes > c.NonResidentLimit; {
		prev := x.prev
		if !x.resident {
			c.s.remove(x)
			x.inS = false
			delete(c.m, x.key)
			c.nNonRes--
		}
		x = prev
	}
}
