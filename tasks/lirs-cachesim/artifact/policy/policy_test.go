package policy

import "testing"

func TestLRUBasic(t *testing.T) {
	c := NewLRU(2)
	seq := []Key{1, 2, 1, 3, 1, 2}
	want := []bool{false, false, true, false, true, false}
	for i, k := range seq {
		if got := c.Access(k); got != want[i] {
			t.Fatalf("ref %d (key %d): hit=%v, want %v", i, k, got, want[i])
		}
	}
}

func TestLoopLIRSBeatsLRU(t *testing.T) {
	var refs []Key
	for r := 0; r < 20; r++ {
		for k := 0; k < 120; k++ {
			refs = append(refs, Key(k))
		}
	}
	count := func(p Policy) int {
		h := 0
		for _, k := range refs {
			if p.Access(k) {
				h++
			}
		}
		return h
	}
	lru, lirs := count(NewLRU(100)), count(NewLIRS(100, DefaultHIRFraction))
	if lru != 0 {
		t.Errorf("LRU on a loop larger than the cache: %d hits, want 0", lru)
	}
	if lirs <= lru {
		t.Errorf("LIRS %d hits <= LRU %d hits on a loop", lirs, lru)
	}
}

func TestCapacity(t *testing.T) {
	for _, n := range Names() {
		p, _ := New(n, 50)
		for i := 0; i < 5000; i++ {
			p.Access(Key((i * 7919) % 313))
			if p.Len() > 50 {
				t.Fatalf("%s: %d resident blocks in a cache of 50", n, p.Len())
			}
		}
	}
}

func TestOptUpperBound(t *testing.T) {
	var refs []Key
	x := uint64(1)
	for i := 0; i < 20000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		refs = append(refs, Key((x>>33)%700))
	}
	o := OptHits(refs, 100)
	for _, n := range Names() {
		p, _ := New(n, 100)
		h := 0
		for _, k := range refs {
			if p.Access(k) {
				h++
			}
		}
		if h > o {
			t.Errorf("%s: %d hits > OPT %d", n, h, o)
		}
	}
}
