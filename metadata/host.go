package metadata

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// Host is one node as the system tables describe it. It is an immutable value: its fields are
// unexported, accessors hand out copies, and it is safe to share between goroutines.
// Whether the node is up is not part of it: that belief lives in the Snapshot.
type Host struct {
	hostID           string // canonical lower-case uuid
	connectAddress   net.IP
	rpcAddress       net.IP
	preferredIP      net.IP
	broadcastAddress net.IP
	port             int
	dataCenter       string
	rack             string
	tokens           []string // sorted, so that two hosts compare as token sets
	releaseVersion   string
	schemaVersion    string
	local            bool
}

// HostSpec is the plain form of a Host, for NewHost and Host.Spec.
type HostSpec struct {
	HostID string // a uuid; stored in canonical lower-case form; the nil uuid is rejected
	// ConnectAddress is the address to dial. When nil it is chosen as gocql v1.7.0 does: the
	// first specified (non-nil, not 0.0.0.0/::) of RPCAddress, PreferredIP, BroadcastAddress.
	ConnectAddress net.IP
	RPCAddress     net.IP // rpc_address (native_address in system.peers_v2)
	PreferredIP    net.IP // preferred_ip
	// BroadcastAddress is the node-to-node address: broadcast_address in system.local and
	// the peer column in system.peers(_v2), so that a host read from either table compares equal.
	BroadcastAddress net.IP
	Port             int // native protocol port, 1..65535
	DataCenter       string
	Rack             string
	Tokens           []string
	ReleaseVersion   string
	SchemaVersion    string // a uuid or ""
	Local            bool   // the row came from system.local: this node served the query
}

// NewHost validates spec and returns the Host it describes. Slices are copied.
func NewHost(spec HostSpec) (Host, error) {
	id, err := canonicalUUID(spec.HostID)
	if err != nil {
		return Host{}, fmt.Errorf("metadata: host_id: %w", err)
	}
	if spec.SchemaVersion != "" {
		if spec.SchemaVersion, err = canonicalUUID(spec.SchemaVersion); err != nil {
			return Host{}, fmt.Errorf("metadata: host %s: schema_version: %w", id, err)
		}
	}
	if spec.Port < 1 || spec.Port > 65535 {
		return Host{}, fmt.Errorf("metadata: host %s: port %d out of range 1..65535", id, spec.Port)
	}
	connect := spec.ConnectAddress
	if connect == nil {
		connect = chooseConnectAddress(spec.RPCAddress, spec.PreferredIP, spec.BroadcastAddress)
	}
	if !validIP(connect) {
		return Host{}, fmt.Errorf("metadata: host %s: no usable connect address (rpc_address %v, preferred_ip %v, broadcast/peer %v)",
			id, spec.RPCAddress, spec.PreferredIP, spec.BroadcastAddress)
	}
	tokens := slices.Clone(spec.Tokens)
	if !slices.IsSorted(tokens) {
		slices.Sort(tokens)
	}
	return Host{
		hostID:           id,
		connectAddress:   cloneIP(connect),
		rpcAddress:       cloneIP(spec.RPCAddress),
		preferredIP:      cloneIP(spec.PreferredIP),
		broadcastAddress: cloneIP(spec.BroadcastAddress),
		port:             spec.Port,
		dataCenter:       spec.DataCenter,
		rack:             spec.Rack,
		tokens:           tokens,
		releaseVersion:   spec.ReleaseVersion,
		schemaVersion:    spec.SchemaVersion,
		local:            spec.Local,
	}, nil
}

// hostFromLocal reads a system.local row. port is the native port the connection used (gocql
// uses ClusterConfig.Port). host_id, rpc_address, data_center, rack and tokens must be columns
// of the result; broadcast_address, preferred_ip, release_version and schema_version are read
// when present. Unlike a peer, a local row is never skipped: a null host_id is an error.
func hostFromLocal(row Row, port int) (Host, error) {
	spec, err := commonSpec(row, "rpc_address", port)
	if err != nil {
		return Host{}, err
	}
	if spec.BroadcastAddress, err = optional(row, "broadcast_address", Row.IP); err != nil {
		return Host{}, err
	}
	if spec.HostID == "" {
		return Host{}, errors.New("metadata: system.local: host_id is null")
	}
	spec.Local = true
	return NewHost(spec)
}

// hostFromPeer reads a system.peers row the way gocql v1.7.0 does. The peer column is the
// host's BroadcastAddress; its port is port (gocql gives every peer ClusterConfig.Port). A row
// with a null rpc_address, host_id, data_center, rack or tokens yields an error wrapping
// ErrInvalidPeer. An rpc_address of 0.0.0.0 is kept, and the connect address falls back to
// preferred_ip, then peer.
//
// One deliberate difference: gocql v1.7.0 reads a null host_id as the nil uuid
// 00000000-0000-0000-0000-000000000000, which passes its emptiness check and then collides in
// its host-ID-keyed ring; here a null or nil-uuid host_id is invalid, as the check intends.
func hostFromPeer(row Row, port int) (Host, error) {
	return peerHost(row, "rpc_address", port, false)
}

// hostFromPeerV2 reads a system.peers_v2 row: native_address stands for rpc_address, and
// native_port, when the column is present and not null, replaces port (gocql v1.7.0 would use
// 0 for a null native_port). peer_port, the node-to-node port, is not needed to reach a host.
// The validity rules are hostFromPeer's.
func hostFromPeerV2(row Row, port int) (Host, error) {
	return peerHost(row, "native_address", port, true)
}

func peerHost(row Row, addrCol string, port int, v2 bool) (Host, error) {
	spec, err := commonSpec(row, addrCol, port)
	if err != nil {
		return Host{}, err
	}
	if spec.BroadcastAddress, err = row.IP("peer"); err != nil {
		return Host{}, err
	}
	if v2 {
		native, err := optional(row, "native_port", Row.Int)
		if err != nil {
			return Host{}, err
		}
		if native != 0 {
			spec.Port = native
		}
	}
	// gocql's isValidPeer, in its order, so the reason names the first failing column.
	var reason string
	switch {
	case len(spec.RPCAddress) == 0:
		reason = addrCol + " is null"
	case spec.HostID == "":
		reason = "host_id is null"
	case spec.DataCenter == "":
		reason = "data_center is empty"
	case spec.Rack == "":
		reason = "rack is empty"
	case len(spec.Tokens) == 0:
		reason = "tokens is empty"
	}
	if reason != "" {
		return Host{}, fmt.Errorf("metadata: peer %v: %w: %s", spec.BroadcastAddress, ErrInvalidPeer, reason)
	}
	if !validIP(chooseConnectAddress(spec.RPCAddress, spec.PreferredIP, spec.BroadcastAddress)) {
		// gocql v1.7.0 panics here; a row that cannot be dialled is skipped instead.
		return Host{}, fmt.Errorf("metadata: peer %v: %w: no usable connect address", spec.BroadcastAddress, ErrInvalidPeer)
	}
	h, err := NewHost(spec)
	if err != nil && spec.HostID == nilUUID {
		return Host{}, fmt.Errorf("metadata: peer %v: %w: host_id is the nil uuid", spec.BroadcastAddress, ErrInvalidPeer)
	}
	return h, err
}

// commonSpec reads the columns system.local and system.peers(_v2) share.
func commonSpec(row Row, addrCol string, port int) (HostSpec, error) {
	var s HostSpec
	var err error
	if s.HostID, err = row.UUID("host_id"); err != nil {
		return s, err
	}
	if s.RPCAddress, err = row.IP(addrCol); err != nil {
		return s, err
	}
	if s.DataCenter, err = row.Text("data_center"); err != nil {
		return s, err
	}
	if s.Rack, err = row.Text("rack"); err != nil {
		return s, err
	}
	if s.Tokens, err = row.Strings("tokens"); err != nil {
		return s, err
	}
	if s.PreferredIP, err = optional(row, "preferred_ip", Row.IP); err != nil {
		return s, err
	}
	if s.ReleaseVersion, err = optional(row, "release_version", Row.Text); err != nil {
		return s, err
	}
	if s.SchemaVersion, err = optional(row, "schema_version", Row.UUID); err != nil {
		return s, err
	}
	s.Port = port
	return s, nil
}

// optional reads a column that older servers or narrow projections may lack.
func optional[T any](row Row, col string, get func(Row, string) (T, error)) (T, error) {
	if !row.Has(col) {
		var zero T
		return zero, nil
	}
	return get(row, col)
}

const nilUUID = "00000000-0000-0000-0000-000000000000"

func canonicalUUID(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty uuid")
	}
	u, err := primitive.ParseUuid(s)
	if err != nil {
		return "", err
	}
	c := u.String()
	if c == nilUUID {
		return "", errors.New("nil uuid")
	}
	return c, nil
}

// chooseConnectAddress follows gocql v1.7.0's connectAddressLocked order for a host it has no
// preset connect address for.
func chooseConnectAddress(rpc, preferred, broadcast net.IP) net.IP {
	for _, ip := range []net.IP{rpc, preferred, broadcast} {
		if validIP(ip) {
			return ip
		}
	}
	return nil
}

func validIP(ip net.IP) bool { return len(ip) > 0 && !ip.IsUnspecified() }

// cloneIP copies ip in its compact form (4 bytes for IPv4) so equal addresses compare equal
// byte for byte.
func cloneIP(ip net.IP) net.IP {
	if ip == nil {
		return nil
	}
	if v4 := ip.To4(); v4 != nil {
		return slices.Clone(v4)
	}
	return slices.Clone(ip)
}

// HostID is the host's uuid in canonical lower-case form.
func (h Host) HostID() string { return h.hostID }

// ConnectAddress is the address to dial.
func (h Host) ConnectAddress() net.IP { return cloneIP(h.connectAddress) }

// RPCAddress is rpc_address (native_address in system.peers_v2); may be nil or 0.0.0.0.
func (h Host) RPCAddress() net.IP { return cloneIP(h.rpcAddress) }

// PreferredIP is preferred_ip, nil when absent.
func (h Host) PreferredIP() net.IP { return cloneIP(h.preferredIP) }

// BroadcastAddress is the node-to-node address (broadcast_address, or peer for a peers row);
// gocql matches events to hosts through it.
func (h Host) BroadcastAddress() net.IP { return cloneIP(h.broadcastAddress) }

// Port is the native protocol port.
func (h Host) Port() int { return h.port }

// DataCenter is data_center.
func (h Host) DataCenter() string { return h.dataCenter }

// Rack is rack.
func (h Host) Rack() string { return h.rack }

// Tokens returns a copy of the host's tokens, sorted as strings.
func (h Host) Tokens() []string { return slices.Clone(h.tokens) }

// NumTokens is len(Tokens()) without the copy.
func (h Host) NumTokens() int { return len(h.tokens) }

// ReleaseVersion is release_version.
func (h Host) ReleaseVersion() string { return h.releaseVersion }

// SchemaVersion is schema_version in canonical form, "" when absent or null.
func (h Host) SchemaVersion() string { return h.schemaVersion }

// Local reports whether the row came from system.local, i.e. this node served the query.
func (h Host) Local() bool { return h.local }

// IsZero reports whether h is the zero Host (not built by NewHost or a HostFrom function).
func (h Host) IsZero() bool { return h.hostID == "" }

// Spec returns a deep copy of h in plain form; NewHost(h.Spec()) equals h.
func (h Host) Spec() HostSpec {
	return HostSpec{
		HostID:           h.hostID,
		ConnectAddress:   cloneIP(h.connectAddress),
		RPCAddress:       cloneIP(h.rpcAddress),
		PreferredIP:      cloneIP(h.preferredIP),
		BroadcastAddress: cloneIP(h.broadcastAddress),
		Port:             h.port,
		DataCenter:       h.dataCenter,
		Rack:             h.rack,
		Tokens:           slices.Clone(h.tokens),
		ReleaseVersion:   h.releaseVersion,
		SchemaVersion:    h.schemaVersion,
		Local:            h.local,
	}
}

// Addr is the host's "ip:port" to dial.
func (h Host) Addr() string {
	return net.JoinHostPort(h.connectAddress.String(), fmt.Sprint(h.port))
}

func (h Host) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "host %s at %s dc=%s rack=%s tokens=%d", h.hostID, h.Addr(), h.dataCenter, h.rack, len(h.tokens))
	if h.releaseVersion != "" {
		fmt.Fprintf(&b, " version=%s", h.releaseVersion)
	}
	if h.local {
		b.WriteString(" local")
	}
	return b.String()
}

// sameAttributes reports whether the attributes a host_updated change is about are equal:
// addresses, port, data center, rack and release version. Local and SchemaVersion are left
// out: which node serves the control connection is not a change of the host, and schema
// versions are reported as a cluster-wide schema_changed.
func (h Host) sameAttributes(o Host) bool {
	return h.connectAddress.Equal(o.connectAddress) &&
		h.rpcAddress.Equal(o.rpcAddress) &&
		h.broadcastAddress.Equal(o.broadcastAddress) &&
		h.port == o.port &&
		h.dataCenter == o.dataCenter &&
		h.rack == o.rack &&
		h.releaseVersion == o.releaseVersion
}

func (h Host) sameTokens(o Host) bool { return slices.Equal(h.tokens, o.tokens) }
