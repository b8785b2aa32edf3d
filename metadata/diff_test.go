package metadata

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summary renders changes as "kind id" lines so whole sequences compare at once.
func summary(changes []Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		if c.Host.IsZero() {
			out[i] = string(c.Kind)
		} else {
			out[i] = fmt.Sprintf("%s %s", c.Kind, c.Host.HostID()[24:])
		}
	}
	return out
}

func TestDiffReportsEveryKindInOrder(t *testing.T) {
	old := mustSnapshot(t, map[string]State{uuidN(6): StateDown},
		mustHost(t, 1, local),
		mustHost(t, 2, nil),
		mustHost(t, 3, nil),
		mustHost(t, 4, nil),
		mustHost(t, 5, nil),
		mustHost(t, 6, nil),
		mustHost(t, 7, nil),
	)
	next := mustSnapshot(t, map[string]State{uuidN(5): StateDown, uuidN(9): StateDown},
		// 1 removed
		mustHost(t, 2, local),                                  // only the serving node changed: no change
		mustHost(t, 3, tokens("301", "302")),                   // moved
		mustHost(t, 4, func(s *HostSpec) { s.Rack = "rack2" }), // updated
		mustHost(t, 5, nil),                                    // down
		mustHost(t, 6, nil),                                    // up
		mustHost(t, 7, func(s *HostSpec) { // updated, moved and down at once
			s.RPCAddress, s.BroadcastAddress, s.Tokens = net.IP{10, 0, 0, 7}, net.IP{10, 0, 0, 7}, []string{"701"}
		}),
		mustHost(t, 8, func(s *HostSpec) { s.SchemaVersion = schemaN(2) }), // added
		mustHost(t, 9, nil), // added, believed down
	)
	next, err := next.WithState(uuidN(7), StateDown)
	require.NoError(t, err)

	changes := diff(old, next)
	assert.Equal(t, []string{
		"host_removed 000000000001",
		"host_moved 000000000003",
		"host_updated 000000000004",
		"host_down 000000000005",
		"host_up 000000000006",
		"host_updated 000000000007",
		"host_moved 000000000007",
		"host_down 000000000007",
		"host_added 000000000008",
		"host_added 000000000009",
		"host_down 000000000009",
		"schema_changed",
	}, summary(changes))

	assert.Equal(t, uuidN(1), changes[0].Host.HostID(), "removed carries the last known host")
	assert.Nil(t, changes[0].Old)
	require.NotNil(t, changes[1].Old)
	assert.Equal(t, []string{"300"}, changes[1].Old.Tokens())
	assert.Equal(t, []string{"301", "302"}, changes[1].Host.Tokens())
	assert.Equal(t, "rack1", changes[2].Old.Rack())
	assert.Equal(t, "rack2", changes[2].Host.Rack())
	assert.Nil(t, changes[3].Old, "state changes carry no Old")

	assert.Equal(t, summary(changes), summary(diff(old, next)), "deterministic")
	assert.Empty(t, diff(next, next))
}

func TestDiffHostUpdatedOnEachAttribute(t *testing.T) {
	mods := map[string]func(*HostSpec){
		"rpc address":       func(s *HostSpec) { s.RPCAddress = net.IP{10, 0, 0, 1} },
		"broadcast address": func(s *HostSpec) { s.BroadcastAddress = net.IP{10, 0, 0, 1} },
		"port":              func(s *HostSpec) { s.Port = 19042 },
		"data center":       func(s *HostSpec) { s.DataCenter = "dc2" },
		"rack":              func(s *HostSpec) { s.Rack = "rack2" },
		"release version":   func(s *HostSpec) { s.ReleaseVersion = "4.1.5" },
	}
	old := mustSnapshot(t, nil, mustHost(t, 1, nil))
	for name, mod := range mods {
		next := mustSnapshot(t, nil, mustHost(t, 1, mod))
		assert.Equal(t, []string{"host_updated 000000000001"}, summary(diff(old, next)), name)
	}
	same := mustSnapshot(t, nil, mustHost(t, 1, func(s *HostSpec) { s.SchemaVersion = schemaN(2) }))
	assert.Equal(t, []string{"schema_changed"}, summary(diff(old, same)), "a host's schema version is a cluster-wide change")
}

func TestDiffFromNothingAddsEveryHost(t *testing.T) {
	s := mustSnapshot(t, nil, mustHost(t, 2, nil), mustHost(t, 1, nil))
	assert.Equal(t, []string{"host_added 000000000001", "host_added 000000000002", "schema_changed"}, summary(diff(nil, s)))
	assert.Equal(t, []string{"host_removed 000000000001", "host_removed 000000000002", "schema_changed"}, summary(diff(s, nil)))
}

// TestDiffRemovesBeforeAddingOnAddressReuse: a node replaced by a new one at the same address
// has a new host ID; the removal comes first even though the new ID sorts first.
func TestDiffRemovesBeforeAddingOnAddressReuse(t *testing.T) {
	old := mustSnapshot(t, nil, mustHost(t, 9, func(s *HostSpec) { s.RPCAddress = net.IP{10, 0, 0, 1} }))
	next := mustSnapshot(t, nil, mustHost(t, 1, func(s *HostSpec) { s.RPCAddress = net.IP{10, 0, 0, 1}; s.Tokens = []string{"900"} }))
	assert.Equal(t, []string{"host_removed 000000000009", "host_added 000000000001"}, summary(diff(old, next)))
}
