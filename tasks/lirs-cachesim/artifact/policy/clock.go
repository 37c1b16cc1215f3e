package policy

// Clock is the classic second-chance approximation of LRU.
type Clock struct {
	size int
	keys []Key
	ref  []bool
	pos  map[Key]int
	hand int
}

func NewClock(size int) *Clock {
	return &Clock{size: size, pos: make(map[Key]int, size)}
}

func (c *Clock) Name() string { return "clock" }
func (c *Clock) Len() int     { return len(c.keys) }

func (c *Clock) Access(k Key) bool {
	if i, ok := c.pos[k]; ok {
		c.ref[i] = true
		return true
	}
	if len(c.keys) < c.size {
		c.pos[k] = len(c.keys)
		c.keys = append(c.keys, k)
		c.ref = append(c.ref, false)
		return false
	}
	for c.ref[c.hand] {
		c.ref[c.hand] = false
		c.hand = (c.hand + 1) % c.size
	}
	delete(c.pos, c.keys[c.hand])
	c.keys[c.hand] = k
	c.ref[c.hand] = false
	c.pos[k] = c.hand
	c.hand = (c.hand + 1) % c.size
	return false
}
