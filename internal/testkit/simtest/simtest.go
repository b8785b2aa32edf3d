// Package simtest holds the test helpers that the tests of controlconn and internal/cqlconn
// share: in-memory cqlsim clusters whose gossip is quiet, a node served on a real loopback
// socket (TLS, host dialers, real-time timeouts), and cells encoded for hand-made results.
// Only tests import it.
package simtest

import (
	"net"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/require"
)

// ClusterName is the cluster_name the clusters of MemConfig report.
const ClusterName = "fake"

// Quiet is a gossip delay longer than any test: the simulated nodes announce nothing by
// themselves, so the events a client gets are the ones its test pushes.
const Quiet = 1000 * time.Hour

// MemConfig is an in-memory cqlsim cluster of n nodes at 10.0.0.1:9042, 10.0.0.2:9042, ...,
// one token each, whose gossip is quiet.
func MemConfig(n int) cqlsim.Config {
	return cqlsim.Config{Nodes: n, BaseIP: "10.0.0.1", ClusterName: ClusterName, TokensPerNode: 1,
		GossipDelay: Quiet, StopAnnounceDelay: Quiet, KillDetectDelay: Quiet}
}

// StartMem starts cfg in memory (inside the test's synctest bubble, if any); the test closes it.
func StartMem(t testing.TB, cfg cqlsim.Config) *cqlsim.Cluster {
	t.Helper()
	c, err := cqlsim.StartInMemory(cfg)
	require.NoError(t, err)
	return c
}

// ServerNode starts an in-memory cluster of cfg outside any bubble, closed when the test ends,
// and returns its first node, to serve connections accepted on real sockets (Listen).
func ServerNode(t testing.TB, cfg cqlsim.Config) (*cqlsim.Cluster, *cqlsim.Node) {
	t.Helper()
	c := StartMem(t, cfg)
	t.Cleanup(func() { _ = c.Close() })
	return c, c.Node(0)
}

// Listen serves node on a loopback port until the test ends and returns its address, for the
// tests that need real sockets: TLS, a host dialer, timeouts in real time.
func Listen(t testing.TB, node *cqlsim.Node) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return Serve(t, node, ln)
}

// Serve hands every connection ln accepts to node until the test ends, then closes ln (the
// node's cluster closes the connections); it returns ln's address.
func Serve(t testing.TB, node *cqlsim.Node, ln net.Listener) string {
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			node.ServeConn(nc)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepting
	})
	return ln.Addr().String()
}

// EncodeCell encodes v as a cell of type typ in protocol v4.
func EncodeCell(t testing.TB, typ datatype.DataType, v any) []byte {
	t.Helper()
	codec, err := datacodec.NewCodec(typ)
	require.NoError(t, err)
	b, err := codec.Encode(v, primitive.ProtocolVersion4)
	require.NoError(t, err)
	return b
}

// NewCluster starts an in-memory cluster of n running nodes (MemConfig), inside the test's
// synctest bubble if any; the test closes it.
func NewCluster(n int) *cqlsim.Cluster {
	c, err := cqlsim.StartInMemory(MemConfig(n))
	if err != nil {
		panic(err) // MemConfig is valid for every n >= 0
	}
	return c
}
