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
	n := 0
	for _, at := range s.at {
		if Within(at, from, to) {
			n++
		}
	}
	return n
}

// Within reports whether at is in [from, to).
func Within(at, from, to time.Time) bool { return !at.Before(from) && at.Before(to) }
