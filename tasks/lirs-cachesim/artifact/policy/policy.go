// Package policy implements the replacement policies compared in the paper.
//
// Every policy manages a cache of a fixed number of equally sized blocks and
// answers, for each reference, whether it was a hit.  Policies are
// deterministic: the same reference string always gives the same hits.
package policy

import (
	"fmt"
	"sort"
	"strings"
)

// Key identifies a block (for block traces: the 4 KiB logical block number).
type Key uint64

// Policy is a cache replacement policy.
type Policy interface {
	// Access references key and reports whether it was a hit.
	Access(k Key) bool
	// Name is the short name used in result tables.
	Name() string
	// Len is the number of resident blocks.
	Len() int
}

type factory func(size int) Policy

var registry = map[string]factory{
	"lru":   func(n int) Policy { return NewLRU(n) },
	"clock": func(n int) Policy { return NewClock(n) },
	"arc":   func(n int) Policy { return NewARC(n) },
	"lirs":  func(n int) Policy { return NewLIRS(n, DefaultHIRFraction) },
	"opt":   nil, // offline, see opt.go
}

// New builds the named policy with room for size blocks.
func New(name string, size int) (Policy, error) {
	f, ok := registry[strings.ToLower(name)]
	if !ok || f == nil {
		return nil, fmt.Errorf("unknown (online) policy %q; have %s", name, strings.Join(Names(), ", "))
	}
	if size < 2 {
		return nil, fmt.Errorf("cache size must be at least 2 blocks, got %d", size)
	}
	return f(size), nil
}

// Names lists the online policies in a fixed order.
func Names() []string {
	var ns []string
	for n, f := range registry {
		if f != nil {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	return ns
}
