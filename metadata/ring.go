package metadata

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Ring is the Murmur3 token ring of a snapshot: every token sorted, with the host that owns
// it. A host owns the range (previous token, its token], and the first token also owns
// everything above the last one (the ring wraps around). Immutable.
type Ring struct {
	tokens []int64
	owners []int32 // index into hosts, parallel to tokens
	hosts  []Host  // the snapshot's hosts, shared
}

// isMurmur3 reports whether partitioner names the Murmur3 partitioner, the only one Ring models
// (Cassandra's default since 1.2, and Scylla's).
func isMurmur3(partitioner string) bool {
	return strings.HasSuffix(partitioner, "Murmur3Partitioner")
}

// ringEntry is one token of the ring and the index of its owner among the ring's hosts.
type ringEntry struct {
	token int64
	owner int32
}

func sortEntries(entries []ringEntry) {
	slices.SortFunc(entries, func(a, b ringEntry) int {
		if c := cmp.Compare(a.token, b.token); c != 0 {
			return c
		}
		return cmp.Compare(a.owner, b.owner)
	})
}

// newRing parses every host's tokens as Murmur3 tokens; two hosts claiming one token is an
// error, because owner lookups would then depend on row order.
func newRing(hosts []Host) (*Ring, error) {
	n := 0
	for _, h := range hosts {
		n += len(h.tokens)
	}
	entries := make([]ringEntry, 0, n)
	for i, h := range hosts {
		for _, t := range h.tokens {
			v, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("metadata: host %s: token %q is not a Murmur3 token: %w", h.hostID, t, err)
			}
			entries = append(entries, ringEntry{v, int32(i)})
		}
	}
	sortEntries(entries)
	return ringFromSorted(entries, hosts, nil)
}

// ringFromSorted builds the ring of hosts from entries sorted by token; perm, when not nil,
// maps an entry's owner to its index in hosts.
func ringFromSorted(entries []ringEntry, hosts []Host, perm []int32) (*Ring, error) {
	r := &Ring{tokens: make([]int64, len(entries)), owners: make([]int32, len(entries)), hosts: hosts}
	for i, e := range entries {
		owner := e.owner
		if perm != nil {
			owner = perm[owner]
		}
		if i > 0 && entries[i-1].token == e.token {
			return nil, fmt.Errorf("metadata: token %d claimed by hosts %s and %s",
				e.token, hosts[r.owners[i-1]].hostID, hosts[owner].hostID)
		}
		r.tokens[i], r.owners[i] = e.token, owner
	}
	return r, nil
}

// Len is the number of tokens on the ring; 0 for a non-Murmur3 partitioner.
func (r *Ring) Len() int {
	if r == nil {
		return 0
	}
	return len(r.tokens)
}

// Owner returns the host owning token: the one with the smallest ring token >= token, or,
// past the last ring token, the one with the first (wraparound). ok is false on an empty ring.
func (r *Ring) Owner(token int64) (h Host, ok bool) {
	if r.Len() == 0 {
		return Host{}, false
	}
	i, _ := slices.BinarySearch(r.tokens, token)
	if i == len(r.tokens) {
		i = 0
	}
	return r.hosts[r.owners[i]], true
}

// At returns the i-th ring token in ascending order and its owner, for 0 <= i < Len().
func (r *Ring) At(i int) (token int64, owner Host) {
	return r.tokens[i], r.hosts[r.owners[i]]
}
