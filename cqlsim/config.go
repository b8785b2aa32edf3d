package cqlsim

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults used when the matching Config field is zero. They mimic a real Cassandra cluster.
const (
	DefaultBaseIP            = "127.0.0.1"
	DefaultClusterName       = "Test Cluster"
	DefaultReleaseVersion    = "3.11.17"
	DefaultDataCenter        = "dc1"
	DefaultTokensPerNode     = 4
	DefaultGossipDelay       = time.Second
	DefaultKillDetectDelay   = 10 * time.Second
	DefaultStopAnnounceDelay = 500 * time.Millisecond
)

// Defaults of the delays for a 5.x ReleaseVersion, as real Cassandra 5.0.8 showed them to a
// client on loopback (recorded in testdata/cassandra-5.0; TestConformsToCassandra50 holds the
// simulator to them): the others push DOWN a few tens of milliseconds after a SIGTERM (the
// stopping node announces its shutdown to gossip first thing), DOWN about 20 s after a SIGKILL
// (the failure detector's conviction), and UP within a second of the node answering CQL. The
// defaults above stay those of 3.11, which was not recorded.
const (
	DefaultGossipDelay50       = 500 * time.Millisecond
	DefaultStopAnnounceDelay50 = 50 * time.Millisecond
	DefaultKillDetectDelay50   = 20 * time.Second
)

// Config describes a simulated cluster. The zero value is a valid one-node Cassandra 3.11 cluster.
//
// Delays follow one rule: zero means the default, a negative value means "at once".
type Config struct {
	// Nodes is the number of nodes started by Start (default 1).
	Nodes int
	// BaseIP is the address of node 0; node i listens on BaseIP+i (default 127.0.0.1).
	BaseIP string
	// Port is the native-protocol port shared by every node; 0 picks one free on every node address.
	Port int

	// ClusterName is system.local's cluster_name (default "Test Cluster").
	ClusterName string
	// ReleaseVersion is every node's release_version (default 3.11.17). 4.0 and later serve
	// system.peers_v2 and protocol v5; 3.x answers v5 with the protocol error real 3.11 gives.
	ReleaseVersion string
	// MaxProtocolVersion caps the protocol versions the nodes negotiate (3 up to the release's
	// greatest; 0 = no cap), as Cassandra's cassandra.max_native_protocol_version (3.0.19+,
	// 3.11.5+) and native_transport_max_negotiable_protocol_version (4.0) do: a first frame of a
	// greater version is refused as an unsupported one, in a frame of the capped version.
	MaxProtocolVersion int
	// NoPeersV2 makes a 4.0+ release serve no system.peers_v2: a query of it gets the
	// "unconfigured table" error a 3.x node gives, as on servers that report a 4.x
	// release_version without that table, and drivers must fall back to system.peers.
	NoPeersV2 bool
	// DataCenter names the data center of every node (default "dc1") unless DataCenters is set.
	DataCenter string
	// DataCenters, when set, assigns node i to DataCenters[i%len(DataCenters)].
	DataCenters []string
	// Racks is the number of racks per data center; node i gets rack "rack<k>" round-robin (default 1).
	Racks int
	// TokensPerNode is the number of Murmur3 tokens each node owns (default 4).
	TokensPerNode int

	// Username and Password, when both set, enable PasswordAuthenticator (SASL PLAIN).
	Username, Password string
	// AuthQuorum makes authentication read the credentials at QUORUM, as Cassandra and Scylla
	// read system_auth: while fewer than a quorum of the cluster's nodes are up, an
	// AUTH_RESPONSE gets error 0x0100 "Unable to perform authentication: ..." (a transient
	// failure, unlike a rejection of the credentials).
	AuthQuorum bool

	// GossipDelay is how long after a node's CQL port opens the other nodes announce it UP
	// (and NEW_NODE for an added node). Default 1s (500ms on 5.x).
	GossipDelay time.Duration
	// KillDetectDelay is how long the other nodes take to announce a killed or blackholed node DOWN
	// (the failure detector's conviction time). Default 10s (20s on 5.x).
	KillDetectDelay time.Duration
	// StopAnnounceDelay is how long the other nodes take to announce a gracefully stopped node DOWN,
	// and a removed node REMOVED_NODE. Default 500ms (50ms on 5.x).
	StopAnnounceDelay time.Duration

	// IdleTimeout closes a client connection that sent nothing for this long (0 = never).
	IdleTimeout time.Duration

	// Logf receives diagnostic lines; nil discards them.
	Logf func(format string, args ...any)
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.BaseIP == "" {
		c.BaseIP = DefaultBaseIP
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	if c.ReleaseVersion == "" {
		c.ReleaseVersion = DefaultReleaseVersion
	}
	if c.DataCenter == "" {
		c.DataCenter = DefaultDataCenter
	}
	if c.Racks == 0 {
		c.Racks = 1
	}
	if c.TokensPerNode == 0 {
		c.TokensPerNode = DefaultTokensPerNode
	}
	gossipDelay, killDelay, stopDelay := DefaultGossipDelay, DefaultKillDetectDelay, DefaultStopAnnounceDelay
	if rel, err := parseRelease(c.ReleaseVersion); err == nil && rel.major >= 5 {
		gossipDelay, killDelay, stopDelay = DefaultGossipDelay50, DefaultKillDetectDelay50, DefaultStopAnnounceDelay50
	}
	c.GossipDelay = delayOrDefault(c.GossipDelay, gossipDelay)
	c.KillDetectDelay = delayOrDefault(c.KillDetectDelay, killDelay)
	c.StopAnnounceDelay = delayOrDefault(c.StopAnnounceDelay, stopDelay)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

func delayOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// validate checks a defaulted config.
func (c Config) validate() error {
	var errs []error
	if c.Nodes < 0 {
		errs = append(errs, fmt.Errorf("cqlsim: Nodes must be >= 0, got %d", c.Nodes))
	}
	ip := net.ParseIP(c.BaseIP).To4()
	if ip == nil {
		errs = append(errs, fmt.Errorf("cqlsim: BaseIP %q is not an IPv4 address", c.BaseIP))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("cqlsim: Port %d out of range", c.Port))
	}
	if _, err := parseRelease(c.ReleaseVersion); err != nil {
		errs = append(errs, err)
	}
	if c.Racks < 1 {
		errs = append(errs, fmt.Errorf("cqlsim: Racks must be >= 1, got %d", c.Racks))
	}
	if c.TokensPerNode < 1 {
		errs = append(errs, fmt.Errorf("cqlsim: TokensPerNode must be >= 1, got %d", c.TokensPerNode))
	}
	if rel, err := parseRelease(c.ReleaseVersion); err == nil && c.MaxProtocolVersion != 0 &&
		(c.MaxProtocolVersion < 3 || c.MaxProtocolVersion > rel.maxProtocol()) {
		errs = append(errs, fmt.Errorf("cqlsim: MaxProtocolVersion %d: release %s speaks v3 to v%d",
			c.MaxProtocolVersion, c.ReleaseVersion, rel.maxProtocol()))
	}
	if (c.Username == "") != (c.Password == "") {
		errs = append(errs, errors.New("cqlsim: Username and Password must be set together"))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("cqlsim: IdleTimeout must be >= 0, got %v", c.IdleTimeout))
	}
	return errors.Join(errs...)
}

// release is a parsed release_version.
type release struct{ major, minor, patch int }

func parseRelease(v string) (release, error) {
	parts := strings.SplitN(strings.TrimSuffix(v, "-SNAPSHOT"), ".", 3)
	if len(parts) < 2 {
		return release{}, fmt.Errorf("cqlsim: ReleaseVersion %q is not major.minor[.patch]", v)
	}
	var r release
	var err error
	if r.major, err = strconv.Atoi(parts[0]); err != nil {
		return release{}, fmt.Errorf("cqlsim: ReleaseVersion %q: %w", v, err)
	}
	if r.minor, err = strconv.Atoi(parts[1]); err != nil {
		return release{}, fmt.Errorf("cqlsim: ReleaseVersion %q: %w", v, err)
	}
	if len(parts) == 3 {
		digits := strings.TrimLeftFunc(parts[2], func(r rune) bool { return r >= '0' && r <= '9' })
		r.patch, _ = strconv.Atoi(strings.TrimSuffix(parts[2], digits))
	}
	if r.major < 3 {
		return release{}, fmt.Errorf("cqlsim: ReleaseVersion %q: only 3.x and later are simulated", v)
	}
	return r, nil
}

// v4 reports whether the release has Cassandra 4.0's system tables and protocol v5.
func (r release) v4() bool { return r.major >= 4 }

// announcesOwnShutdown reports whether a graceful stop pushes STATUS_CHANGE DOWN about the node
// itself to its own clients before the connections close (and a decommission REMOVED_NODE), as
// recorded from Cassandra 5.0.8 (testdata/cassandra-5.0); 3.11 and 4.x were not recorded and
// keep the older behaviour.
func (r release) announcesOwnShutdown() bool { return r.major >= 5 }

// maxProtocol is the greatest native protocol version the release speaks.
func (r release) maxProtocol() int {
	if r.v4() {
		return 5
	}
	return 4
}

// cqlVersion is the CQL_VERSION the release advertises.
func (r release) cqlVersion() string {
	switch {
	case r.major >= 5:
		return "3.4.7"
	case r.major == 4 && r.minor >= 1:
		return "3.4.6"
	case r.major == 4:
		return "3.4.5"
	}
	return "3.4.4"
}
