package policy

// LRU evicts the least recently used block.
type LRU struct {
	size int
	m    map[Key]*node
	l    dlist
}

func NewLRU(size int) *LRU { return &LRU{size: size, m: make(map[Key]*node, size)} }

func (c *LRU) Name() string { return "lru" }
func (c *LRU) Len() int     { return c.l.n }

func (c *LRU) Access(k Key) bool {
	if x, ok := c.m[k]; ok {
		c.l.moveToFront(x)
		return true
	}
	if c.l.n >= c.size {
		v := c.l.tail
		c.l.remove(v)
		delete(c.m, v.key)
	}
	x := &node{key: k}
	c.l.pushFront(x)
	c.m[k] = x
	return false
}
