package metadata

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func local(s *HostSpec) { s.Local = true }

func TestNewSnapshotValidates(t *testing.T) {
	_, err := NewSnapshot(SnapshotConfig{Hosts: []Host{mustHost(t, 1, nil), mustHost(t, 1, nil)}})
	require.ErrorIs(t, err, ErrDuplicateHost)

	_, err = NewSnapshot(SnapshotConfig{Hosts: []Host{mustHost(t, 1, local), mustHost(t, 2, local)}})
	assert.ErrorContains(t, err, "are both local")

	_, err = NewSnapshot(SnapshotConfig{Hosts: []Host{{}}})
	assert.ErrorContains(t, err, "zero Host")

	_, err = NewSnapshot(SnapshotConfig{Hosts: []Host{mustHost(t, 1, nil)}, States: map[string]State{uuidN(1): StateUnknown}})
	assert.ErrorContains(t, err, "invalid state 0")

	s, err := NewSnapshot(SnapshotConfig{Hosts: []Host{mustHost(t, 1, nil)}, States: map[string]State{uuidN(9): StateDown}})
	require.NoError(t, err, "states of other hosts are ignored")
	assert.Equal(t, StateUp, s.State(uuidN(1)))
}

func TestSnapshotAccessors(t *testing.T) {
	s := mustSnapshot(t, map[string]State{uuidN(2): StateDown},
		mustHost(t, 3, nil), mustHost(t, 1, local), mustHost(t, 2, nil))

	hosts := s.Hosts()
	require.Len(t, hosts, 3)
	assert.Equal(t, []string{uuidN(1), uuidN(2), uuidN(3)}, []string{hosts[0].HostID(), hosts[1].HostID(), hosts[2].HostID()})
	assert.Equal(t, StateUp, s.State(uuidN(1)), "no state given: up")
	assert.Equal(t, StateDown, s.State(uuidN(2)))
	assert.Equal(t, StateUnknown, s.State(uuidN(9)))
	assert.Equal(t, map[string]State{uuidN(1): StateUp, uuidN(2): StateDown, uuidN(3): StateUp}, s.States())
	l, ok := s.Local()
	require.True(t, ok)
	assert.Equal(t, uuidN(1), l.HostID())
	assert.Equal(t, "Test Cluster", s.ClusterName())

	var seen []string
	for h, st := range s.All() {
		seen = append(seen, h.HostID()+"="+st.String())
	}
	assert.Equal(t, []string{uuidN(1) + "=up", uuidN(2) + "=down", uuidN(3) + "=up"}, seen)
}

func TestSnapshotWithStateLeavesOriginalAlone(t *testing.T) {
	s := mustSnapshot(t, nil, mustHost(t, 1, nil), mustHost(t, 2, nil))
	down, err := s.WithState(uuidN(2), StateDown)
	require.NoError(t, err)
	assert.Equal(t, StateDown, down.State(uuidN(2)))
	assert.Equal(t, StateUp, s.State(uuidN(2)))

	same, err := down.WithState(uuidN(2), StateDown)
	require.NoError(t, err)
	assert.Same(t, down, same)

	_, err = s.WithState(uuidN(9), StateDown)
	require.ErrorIs(t, err, ErrUnknownHost)
}

func TestSnapshotSchemaAgreementIgnoresDownHosts(t *testing.T) {
	v2 := func(s *HostSpec) { s.SchemaVersion = schemaN(2) }
	noVersion := func(s *HostSpec) { s.SchemaVersion = "" }
	s := mustSnapshot(t, nil, mustHost(t, 1, nil), mustHost(t, 2, v2), mustHost(t, 3, noVersion))
	assert.Equal(t, []string{schemaN(1), schemaN(2)}, s.SchemaVersions())
	assert.False(t, s.SchemaAgreement())

	down, err := s.WithState(uuidN(2), StateDown)
	require.NoError(t, err)
	assert.True(t, down.SchemaAgreement())
}

func TestSnapshotHostByAddr(t *testing.T) {
	natted := func(s *HostSpec) { s.RPCAddress = net.IP{10, 0, 0, 2} } // broadcast 127.0.0.2
	sharedA := func(s *HostSpec) { s.RPCAddress, s.Port = net.IP{10, 9, 9, 9}, 9042 }
	sharedB := func(s *HostSpec) { s.RPCAddress, s.Port = net.IP{10, 9, 9, 9}, 9043 }
	s := mustSnapshot(t, nil, mustHost(t, 1, nil), mustHost(t, 2, natted), mustHost(t, 3, sharedA), mustHost(t, 4, sharedB))

	h, err := s.HostByAddr(net.ParseIP("127.0.0.1"), 9042)
	require.NoError(t, err)
	assert.Equal(t, uuidN(1), h.HostID())

	h, err = s.HostByAddr(net.IP{10, 0, 0, 2}, 0)
	require.NoError(t, err)
	assert.Equal(t, uuidN(2), h.HostID(), "by rpc address")
	h, err = s.HostByAddr(net.IP{127, 0, 0, 2}, 9042)
	require.NoError(t, err)
	assert.Equal(t, uuidN(2), h.HostID(), "by broadcast address, as gocql matches")

	h, err = s.HostByAddr(net.IP{10, 9, 9, 9}, 9043)
	require.NoError(t, err)
	assert.Equal(t, uuidN(4), h.HostID(), "same IP told apart by port")
	_, err = s.HostByAddr(net.IP{10, 9, 9, 9}, 0)
	require.ErrorIs(t, err, ErrUnknownHost)
	assert.ErrorContains(t, err, "ambiguous (2 hosts)")

	_, err = s.HostByAddr(net.IP{192, 168, 0, 1}, 9042)
	require.ErrorIs(t, err, ErrUnknownHost)
}
