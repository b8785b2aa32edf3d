package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/syncount"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// The fleet's SYNs (package syncount, as make peers counts them): an nftables rule counts every
// TCP SYN without ACK, retransmissions included, that a socket of a worker process sends to a
// node's CQL port. The workers run with a group ID of their own (fleetGID) and the rule matches
// the sending socket's group, so the canary, the readiness probes and nodetool, which run in
// the coordinator, and the nodes' own traffic are not counted. A SYN to a closed port costs the
// server nothing (its kernel answers); they are counted to show what the clients sent.
const fleetGID = 4243

// SYNs is a fault's SYN counts: Outage from the fault until the node(s) answered CQL, Return
// from then until the count (every client serving, or the cap, then the tail).
type SYNs struct {
	Outage int64 `json:"outage"`
	Return int64 `json:"return"`
}

// installSYNCounter installs the counter for c's nodes, or says on stderr why the run counts no
// SYNs (nft missing, not root) and returns nil: every other figure is still measured.
func installSYNCounter(c *realcluster.Cluster) *syncount.Counter {
	syn, err := syncount.New("cqlcontrol_fleet_", fleetGID, c.Hosts(), c.Port())
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleet: SYNs are not counted in this run: %v (make fleet installs the nftables package; the counter needs root)\n", err)
		return nil
	}
	return syn
}

// synSampler reads the counter every synEvery from the fault to the count, so that the
// outage's SYNs end at the node answering CQL (a moment the coordinator learns only after it,
// from a poll or a nodetool run) within synEvery. With no counter, or after a failed read, it
// has no counts.
type synSampler struct {
	read    func() (int64, error)
	mu      sync.Mutex
	samples []synSample
	failed  bool
	stop    chan struct{}
	done    chan struct{}
}

type synSample struct {
	at time.Time
	n  int64
}

const synEvery = 200 * time.Millisecond

// startSYNSampler takes the first sample at once (the fault's) and the next every synEvery;
// with a nil counter it samples nothing.
func startSYNSampler(c *syncount.Counter) *synSampler {
	s := &synSampler{stop: make(chan struct{}), done: make(chan struct{})}
	if c == nil {
		close(s.done)
		return s
	}
	s.read = c.Read
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(synEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *synSampler) sample() {
	n, err := s.read()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if !s.failed {
			fmt.Fprintln(os.Stderr, "fleet: reading the SYN counter:", err)
		}
		s.failed = true
		return
	}
	s.samples = append(s.samples, synSample{at: now, n: n})
}

// end takes the last sample (the count's) and stops the sampling; once only.
func (s *synSampler) end() {
	if s.read == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.sample()
	s.read = nil
}

// counts returns the SYNs from the first sample to the last one at or before ready (the
// outage), and from there to the last sample (the return); nil without samples either side.
func (s *synSampler) counts(ready time.Time) *SYNs {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed || len(s.samples) < 2 {
		return nil
	}
	at := -1
	for i, x := range s.samples {
		if !x.at.After(ready) {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	first, mid, last := s.samples[0].n, s.samples[at].n, s.samples[len(s.samples)-1].n
	return &SYNs{Outage: mid - first, Return: last - mid}
}
