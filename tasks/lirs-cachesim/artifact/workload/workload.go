package workload

import (
	"fmt"
	"math"
	"sort"

	"github.com/hpss-lab/cachesim/policy"
)

// Spec describes one synthetic workload (see experiments/*.json).
type Spec struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"`   // zipf | loop | scanmix | shift
	Keys   int     `json:"keys"`   // size of the (hot) key space
	Length int     `json:"length"` // number of references
	Alpha  float64 `json:"alpha"`  // zipf skew
	Scan   int     `json:"scan"`   // scanmix: length of one scan
	Every  int     `json:"every"`  // scanmix: a scan after this many zipf refs; shift: phase length
	Seed   uint64  `json:"seed"`
}

// Generate returns the reference string of s.
func Generate(s Spec) ([]policy.Key, error) {
	if s.Length <= 0 || s.Keys <= 0 {
		return nil, fmt.Errorf("workload %s: keys and length must be positive", s.Name)
	}
	r := NewRNG(s.Seed)
	out := make([]policy.Key, 0, s.Length)
	switch s.Kind {
	case "zipf":
		z := newZipf(s.Keys, s.Alpha)
		for len(out) < s.Length {
			out = append(out, policy.Key(z.draw(r)))
		}
	case "loop":
		// a cyclic sweep over Keys blocks with 10% random references
		i := 0
		for len(out) < s.Length {
			if r.Intn(10) == 0 {
				out = append(out, policy.Key(r.Intn(s.Keys)))
			} else {
				out = append(out, policy.Key(i))
				i = (i + 1) % s.Keys
			}
		}
	case "scanmix":
		// zipf references to a hot set, interrupted by one-time scans of
		// blocks that are never referenced again
		z := newZipf(s.Keys, s.Alpha)
		next := uint64(1) << 40
		n := 0
		for len(out) < s.Length {
			out = append(out, policy.Key(z.draw(r)))
			n++
			if s.Every > 0 && n%s.Every == 0 {
				for j := 0; j < s.Scan && len(out) < s.Length; j++ {
					out = append(out, policy.Key(next))
					next++
				}
			}
		}
	case "shift":
		// the zipf working set moves to fresh keys every Every references
		z := newZipf(s.Keys, s.Alpha)
		base := 0
		for len(out) < s.Length {
			if s.Every > 0 && len(out) > 0 && len(out)%s.Every == 0 {
				base += s.Keys / 2
			}
			out = append(out, policy.Key(base+z.draw(r)))
		}
	default:
		return nil, fmt.Errorf("workload %s: unknown kind %q", s.Name, s.Kind)
	}
	return out, nil
}

// zipf samples ranks 0..n-1 with P(i) ~ 1/(i+1)^alpha by inverting the
// cumulative distribution; ranks are scattered over the key space with a
// fixed permutation so that hot keys are not adjacent block numbers.
type zipf struct {
	cdf  []float64
	perm []int
}

func newZipf(n int, alpha float64) *zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for i := 0; i < n; i++ {
		sum += 1 / math.Pow(float64(i+1), alpha)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	pr := NewRNG(0x5eed)
	for i := n - 1; i > 0; i-- {
		j := pr.Intn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return &zipf{cdf: cdf, perm: perm}
}

func (z *zipf) draw(r *RNG) int {
	u := r.Float64()
	i := sort.SearchFloat64s(z.cdf, u)
	if i >= len(z.cdf) {
		i = len(z.cdf) - 1
	}
	return z.perm[i]
}
