package metadata

import "slices"

// ChangeKind names what changed between two snapshots.
type ChangeKind string

const (
	HostAdded     ChangeKind = "host_added"
	HostRemoved   ChangeKind = "host_removed"
	HostUp        ChangeKind = "host_up"
	HostDown      ChangeKind = "host_down"
	HostMoved     ChangeKind = "host_moved"   // its tokens changed
	HostUpdated   ChangeKind = "host_updated" // address, port, data center, rack or release version changed
	SchemaChanged ChangeKind = "schema_changed"
	// Resync is not a change: a subscription that fell behind gets it instead of the changes
	// it could not hold, and must call Subscription.Resync to continue.
	Resync ChangeKind = "resync"
)

// Change is one difference between two snapshots.
type Change struct {
	Kind ChangeKind
	// Host is the host concerned: its new version, or for host_removed its last known one.
	// Zero for schema_changed and resync.
	Host Host
	// Old is the previous version of the host for host_updated and host_moved, nil otherwise.
	Old *Host
}

// diff lists what turned old into next, in a deterministic order: first host_removed for every
// host gone, by host ID (so a consumer keyed by address drops the old host before an added
// host reuses its address); then, by host ID, for each host of next: host_added (followed by
// host_down if it is added believed down) or, for a host in both, host_updated, host_moved,
// then host_up or host_down; last, one schema_changed if the set of schema versions differs.
// A nil old is an empty cluster, so diff(nil, s) adds every host of s.
func diff(old, next *Snapshot) []Change {
	if old == nil {
		old = &Snapshot{}
	}
	if next == nil {
		next = &Snapshot{}
	}
	var out []Change
	for _, h := range old.hosts {
		if _, ok := next.index[h.hostID]; !ok {
			out = append(out, Change{Kind: HostRemoved, Host: h})
		}
	}
	for i, h := range next.hosts {
		st := next.states[i]
		j, ok := old.index[h.hostID]
		if !ok {
			out = append(out, Change{Kind: HostAdded, Host: h})
			if st == StateDown {
				out = append(out, Change{Kind: HostDown, Host: h})
			}
			continue
		}
		prev := &old.hosts[j]
		if !h.sameAttributes(*prev) {
			out = append(out, Change{Kind: HostUpdated, Host: h, Old: copyOf(*prev)})
		}
		if !h.sameTokens(*prev) {
			out = append(out, Change{Kind: HostMoved, Host: h, Old: copyOf(*prev)})
		}
		if was := old.states[j]; was != st {
			kind := HostUp
			if st == StateDown {
				kind = HostDown
			}
			out = append(out, Change{Kind: kind, Host: h})
		}
	}
	if !slices.Equal(old.schema, next.schema) {
		out = append(out, Change{Kind: SchemaChanged})
	}
	return out
}

// copyOf gives each change its own Old, so no change points into a snapshot's storage.
func copyOf(h Host) *Host { return &h }
