package policy

import "container/heap"

// OptHits returns the number of hits of Belady's offline optimal policy
// (evict the block whose next reference is furthest in the future) on
// refs with a cache of size blocks.  Used as the upper bound in Table 2.
func OptHits(refs []Key, size int) int {
	n := len(refs)
	next := make([]int, n)
	last := make(map[Key]int)
	for i := n - 1; i >= 0; i-- {
		if j, ok := last[refs[i]]; ok {
			next[i] = j
		} else {
			next[i] = n + i // never again; distinct values keep ties ordered
		}
		last[refs[i]] = i
	}
	cur := make(map[Key]int, size) // key -> its current next-use
	h := &optHeap{}
	hits := 0
	for i, k := range refs {
		if _, ok := cur[k]; ok {
			hits++
		} else if len(cur) >= size {
			for {
				e := heap.Pop(h).(optEntry)
				if nu, ok := cur[e.key]; ok && nu == e.next {
					delete(cur, e.key)
					break
				}
			}
		}
		cur[k] = next[i]
		heap.Push(h, optEntry{k, next[i]})
	}
	return hits
}

type optEntry struct {
	key  Key
	next int
}

type optHeap []optEntry

func (h optHeap) Len() int            { return len(h) }
func (h optHeap) Less(i, j int) bool  { return h[i].next > h[j].next }
func (h optHeap) Swap(i, j int)       { h[i], h[j] = h[j], h[i] }
func (h *optHeap) Push(x interface{}) { *h = append(*h, x.(optEntry)) }
func (h *optHeap) Pop() interface{} {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
