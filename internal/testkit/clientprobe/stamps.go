package clientprobe

import (
	"sync"
	"time"
)

// Stamps is a list of instants, safe for concurrent use.
type Stamps struct {
	mu sync.Mutex
	at []time.Time
}

// Add records an instant.
func (s *Stamps) Add(at time.Time) {
	s.mu.Lock()
	s.at = append(s.at, at)
	s.mu.Unlock()
}

// In counts the instants within [from, to).
func (s *Stamps) In(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(filter(s.at, func(at time.Time) bool { return Within(at, from, to) }))
}

// Within reports whether at is in [from, to).
func Within(at, from, to time.Time) bool { return !at.Before(from) && at.Before(to) }

// filter returns the elements of xs that keep accepts, in order, in a new slice.
func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
