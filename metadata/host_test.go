package metadata

import (
	"net"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostFromLocalReadsEveryField(t *testing.T) {
	row := decodeOne(t, "local", localCols, localRow(1, "100", "-100"))
	h, err := hostFromLocal(row, 9042)
	require.NoError(t, err)

	assert.Equal(t, uuidN(1), h.HostID())
	assert.Equal(t, net.IP{127, 0, 0, 1}, h.ConnectAddress())
	assert.Equal(t, net.IP{127, 0, 0, 1}, h.RPCAddress())
	assert.Equal(t, net.IP{127, 0, 0, 1}, h.BroadcastAddress())
	assert.Equal(t, 9042, h.Port())
	assert.Equal(t, "127.0.0.1:9042", h.Addr())
	assert.Equal(t, "dc1", h.DataCenter())
	assert.Equal(t, "rack1", h.Rack())
	assert.Equal(t, []string{"-100", "100"}, h.Tokens(), "sorted")
	assert.Equal(t, "3.11.17", h.ReleaseVersion())
	assert.Equal(t, schemaN(1), h.SchemaVersion())
	assert.True(t, h.Local())
}

func TestHostFromLocalNeedsHostID(t *testing.T) {
	r := localRow(1, "1")
	delete(r, "host_id") // NULL
	_, err := hostFromLocal(decodeOne(t, "local", localCols, r), 9042)
	assert.ErrorContains(t, err, "host_id is null")
	assert.NotErrorIs(t, err, ErrInvalidPeer)
}

func TestHostFromLocalFallsBackToBroadcastAddress(t *testing.T) {
	r := localRow(1, "1")
	r["rpc_address"] = net.IPv4zero
	h, err := hostFromLocal(decodeOne(t, "local", localCols, r), 9042)
	require.NoError(t, err)
	assert.Equal(t, net.IP{127, 0, 0, 1}, h.ConnectAddress())
	assert.Equal(t, net.IP{0, 0, 0, 0}, h.RPCAddress())
}

// TestHostFromPeerSkipsAsGocqlDoes follows gocql v1.7.0's isValidPeer: a row with an empty
// rpc_address, host_id, data_center, rack or tokens is ignored.
func TestHostFromPeerSkipsAsGocqlDoes(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(map[string]any)
		reason string // "" = valid
	}{
		{"valid", func(map[string]any) {}, ""},
		{"null rpc_address", func(r map[string]any) { delete(r, "rpc_address") }, "rpc_address is null"},
		{"null host_id", func(r map[string]any) { delete(r, "host_id") }, "host_id is null"},
		{"nil uuid host_id", func(r map[string]any) { r["host_id"] = nilUUID }, "host_id is the nil uuid"},
		{"null data_center", func(r map[string]any) { delete(r, "data_center") }, "data_center is empty"},
		{"empty data_center", func(r map[string]any) { r["data_center"] = "" }, "data_center is empty"},
		{"null rack", func(r map[string]any) { delete(r, "rack") }, "rack is empty"},
		{"empty rack", func(r map[string]any) { r["rack"] = "" }, "rack is empty"},
		{"null tokens", func(r map[string]any) { delete(r, "tokens") }, "tokens is empty"},
		{"empty tokens", func(r map[string]any) { r["tokens"] = []string{} }, "tokens is empty"},
		{"first failing column is named", func(r map[string]any) { delete(r, "rack"); delete(r, "host_id") }, "host_id is null"},
		{"null release_version is fine", func(r map[string]any) { delete(r, "release_version") }, ""},
		{"null schema_version is fine", func(r map[string]any) { delete(r, "schema_version") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := peerRow(2, "200")
			tc.mod(r)
			h, err := hostFromPeer(decodeOne(t, "peers", peersCols, r), 9042)
			if tc.reason == "" {
				require.NoError(t, err)
				assert.Equal(t, uuidN(2), h.HostID())
				assert.False(t, h.Local())
				return
			}
			require.ErrorIs(t, err, ErrInvalidPeer)
			assert.ErrorContains(t, err, tc.reason)
			assert.ErrorContains(t, err, "peer 127.0.0.2")
		})
	}
}

// TestHostFromPeerUnspecifiedRPCAddress: gocql keeps a peer whose rpc_address is 0.0.0.0 and
// dials preferred_ip, else the peer address.
func TestHostFromPeerUnspecifiedRPCAddress(t *testing.T) {
	r := peerRow(2, "200")
	r["rpc_address"] = net.IPv4zero
	h, err := hostFromPeer(decodeOne(t, "peers", peersCols, r), 9042)
	require.NoError(t, err)
	assert.Equal(t, net.IP{127, 0, 0, 2}, h.ConnectAddress(), "peer")
	assert.Equal(t, net.IP{0, 0, 0, 0}, h.RPCAddress())

	r["preferred_ip"] = net.ParseIP("10.1.1.2")
	h, err = hostFromPeer(decodeOne(t, "peers", peersCols, r), 9042)
	require.NoError(t, err)
	assert.Equal(t, net.IP{10, 1, 1, 2}, h.ConnectAddress(), "preferred_ip before peer")

	r = peerRow(2, "200")
	r["rpc_address"] = net.IPv6unspecified
	r["peer"] = net.IPv6unspecified
	_, err = hostFromPeer(decodeOne(t, "peers", peersCols, r), 9042)
	require.ErrorIs(t, err, ErrInvalidPeer)
	assert.ErrorContains(t, err, "no usable connect address")
}

func TestHostFromPeerColumnErrorsAreNotSkips(t *testing.T) {
	cols := make([]colSpec, 0, len(peersCols))
	for _, c := range peersCols {
		if c.name != "rack" {
			cols = append(cols, c)
		}
	}
	_, err := hostFromPeer(decodeOne(t, "peers", cols, peerRow(2, "1")), 9042)
	require.ErrorIs(t, err, ErrMissingColumn)
	assert.NotErrorIs(t, err, ErrInvalidPeer)

	cols = append([]colSpec{}, peersCols...)
	cols[6] = colSpec{"rpc_address", datatype.Varchar}
	r := peerRow(2, "1")
	r["rpc_address"] = "127.0.0.2"
	_, err = hostFromPeer(decodeOne(t, "peers", cols, r), 9042)
	require.ErrorIs(t, err, ErrColumnType)
	assert.ErrorContains(t, err, `column "rpc_address"`)
}

func TestHostFromPeerV2UsesNativeAddressAndPort(t *testing.T) {
	h, err := hostFromPeerV2(decodeOne(t, "peers_v2", peersV2Cols, peerV2Row(3, 19042, "300")), 9042)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.3:19042", h.Addr())
	assert.Equal(t, "4.1.5", h.ReleaseVersion())

	r := peerV2Row(3, 0, "300")
	delete(r, "native_port")
	h, err = hostFromPeerV2(decodeOne(t, "peers_v2", peersV2Cols, r), 9042)
	require.NoError(t, err)
	assert.Equal(t, 9042, h.Port(), "a null native_port falls back to the configured port")

	r = peerV2Row(3, 9042, "300")
	delete(r, "native_address")
	_, err = hostFromPeerV2(decodeOne(t, "peers_v2", peersV2Cols, r), 9042)
	require.ErrorIs(t, err, ErrInvalidPeer)
	assert.ErrorContains(t, err, "native_address is null")
}

func TestNewHostValidates(t *testing.T) {
	ok := HostSpec{HostID: uuidN(1), RPCAddress: ipN(1), Port: 9042}
	cases := map[string]func(*HostSpec){
		"host_id: empty uuid":              func(s *HostSpec) { s.HostID = "" },
		"host_id: invalid UUID":            func(s *HostSpec) { s.HostID = "not-a-uuid" },
		"host_id: nil uuid":                func(s *HostSpec) { s.HostID = nilUUID },
		"port 0 out of range 1..65535":     func(s *HostSpec) { s.Port = 0 },
		"port 65536 out of range 1..65535": func(s *HostSpec) { s.Port = 65536 },
		"no usable connect address":        func(s *HostSpec) { s.RPCAddress = net.IPv4zero },
		"schema_version: invalid UUID":     func(s *HostSpec) { s.SchemaVersion = "x" },
	}
	for want, mod := range cases {
		spec := ok
		mod(&spec)
		_, err := NewHost(spec)
		assert.ErrorContains(t, err, want)
	}

	spec := ok
	spec.HostID = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
	h, err := NewHost(spec)
	require.NoError(t, err)
	assert.Equal(t, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", h.HostID())
}

func TestHostIsImmutable(t *testing.T) {
	tokens := []string{"2", "1"}
	rpc := net.IP{10, 0, 0, 1}
	h, err := NewHost(HostSpec{HostID: uuidN(1), RPCAddress: rpc, Port: 9042, Tokens: tokens})
	require.NoError(t, err)

	tokens[0], rpc[3] = "9", 9
	h.Tokens()[0] = "9"
	h.ConnectAddress()[3] = 9
	h.Spec().RPCAddress[3] = 9

	assert.Equal(t, []string{"1", "2"}, h.Tokens())
	assert.Equal(t, net.IP{10, 0, 0, 1}, h.ConnectAddress())
	assert.Equal(t, net.IP{10, 0, 0, 1}, h.RPCAddress())

	again, err := NewHost(h.Spec())
	require.NoError(t, err)
	assert.Equal(t, h, again, "NewHost(h.Spec()) == h")
}
