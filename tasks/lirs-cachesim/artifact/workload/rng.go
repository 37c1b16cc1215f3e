// Package workload generates the synthetic reference strings of Section 4.
package workload

// We do not use math/rand: its default source changed behaviour between Go
// releases we used on the cluster, and we want traces that are identical
// everywhere.  SplitMix64 (Steele et al., OOPSLA '14).
type RNG struct{ s uint64 }

func NewRNG(seed uint64) *RNG { return &RNG{s: seed} }

func (r *RNG) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float64 is uniform in [0, 1) with 53 random bits.
func (r *RNG) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Intn is uniform in [0, n) (n > 0); the modulo bias is negligible for the
// n we use and keeps the stream simple to reimplement.
func (r *RNG) Intn(n int) int { return int(r.Uint64() % uint64(n)) }
