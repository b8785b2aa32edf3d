package cqlconn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// BenchmarkHandshake measures one control-connection handshake to a simulated node on
// loopback: TCP connect, protocol negotiation (v4), STARTUP, REGISTER for the three event
// types, then Close. The first metadata read is BenchmarkConnectAndRead.
func BenchmarkHandshake(b *testing.B) {
	sim := benchSim(b)
	ep := Endpoint{Addr: sim.Node(0).Addr()}
	cfg := ConnConfig{HeartbeatInterval: -1}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Dial(ctx, ep, cfg)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// BenchmarkConnectAndRead is a whole successful attempt's work on one host: the handshake and
// the first metadata read (system.local and system.peers of a 3-node cluster).
func BenchmarkConnectAndRead(b *testing.B) {
	sim := benchSim(b)
	ep := Endpoint{Addr: sim.Node(0).Addr()}
	cfg := ConnConfig{HeartbeatInterval: -1}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Dial(ctx, ep, cfg)
		if err != nil {
			b.Fatal(err)
		}
		var peers atomic.Int32
		if _, _, err := ReadTables(ctx, c, sim.Port(), &peers); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

func benchSim(b *testing.B) *cqlsim.Cluster {
	b.Helper()
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 3, GossipDelay: 10 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sim.Close() })
	return sim
}
