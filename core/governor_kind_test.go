package core

import (
	"context"
	"io"
	"log"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// kindDialer records what driverSetupKind says of each of gocql's dials and setups, where
// the governor asks it: in the HostDialer gocql calls and in its connect observer.
type kindDialer struct {
	inner gocql.HostDialer
	mu    sync.Mutex
	dials map[dialgate.Kind]int
	ends  map[dialgate.Kind]int
}

func (d *kindDialer) DialHost(ctx context.Context, host *gocql.HostInfo) (*gocql.DialedHost, error) {
	k := driverSetupKind()
	d.mu.Lock()
	d.dials[k]++
	d.mu.Unlock()
	return d.inner.DialHost(ctx, host)
}

func (d *kindDialer) ObserveConnect(gocql.ObservedConnect) {
	k := driverSetupKind()
	d.mu.Lock()
	d.ends[k]++
	d.mu.Unlock()
}

// gocql v1.7.0 dials its control connection and its pools through the same HostDialer with
// the same context; driverSetupKind tells them apart by the dialling goroutine's stack: one
// session on 3 nodes makes two control-connection setups (version discovery, then the
// connection) and NumConns (2) pool setups per node.
// Checked to fail with the frame pattern changed to one no frame has (no frame
// matches, every setup is a pool's).
func TestDriverSetupKindTellsGocqlsControlConnectionFromItsPools(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim, err := cqlsim.StartInMemory(cqlsim.Config{Nodes: 3, ReleaseVersion: "3.11.17"})
		require.NoError(t, err)
		defer func() { assert.NoError(t, sim.Close()) }()
		var ips []string
		for _, n := range sim.Nodes() {
			ips = append(ips, n.IP().String())
		}
		cluster := gocql.NewCluster(ips...)
		cluster.Port = sim.Port()
		cluster.Dialer = sim
		cluster.Logger = log.New(io.Discard, "", 0)
		inner, err := gocqlv1.PlainHostDialer(cluster, nil), error(nil)
		require.NoError(t, err)
		d := &kindDialer{inner: inner, dials: map[dialgate.Kind]int{}, ends: map[dialgate.Kind]int{}}
		cluster.HostDialer = d
		cluster.ConnectObserver = d
		session, err := cluster.CreateSession()
		require.NoError(t, err)
		defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)
		time.Sleep(5 * time.Second) // virtual: every pool filled
		synctest.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		// Two: the protocol version's discovery (ProtoVersion 0), then the control connection.
		assert.Equal(t, 2, d.dials[dialgate.Control], "the control connection's dials")
		assert.Equal(t, 2, d.ends[dialgate.Control], "the control connection's setups")
		assert.Equal(t, 6, d.dials[dialgate.Pool], "two pool connections to each of 3 nodes")
		assert.Equal(t, 6, d.ends[dialgate.Pool])
	})
}

// Each gocql line's control-connection methods have their kind; nothing else is one. The
// names are the runtime's, as gocql v1.7.0 and v2.1.2 are built (gocqlv2's
// TestV2ControlConnectionFramesNamed checks v2's on a real session).
func TestControlConnKind(t *testing.T) {
	for _, c := range []struct {
		name string
		kind dialgate.Kind
		ok   bool
	}{
		{"github.com/gocql/gocql.(*controlConn).connect", dialgate.Control, true},
		{"github.com/gocql/gocql.(*controlConn).reconnect", dialgate.Control, true},
		{"github.com/apache/cassandra-gocql-driver/v2.(*controlConn).attemptReconnect", dialgate.PooledControl, true},
		{"github.com/apache/cassandra-gocql-driver/v2.(*hostConnPool).connect", dialgate.Pool, false},
		{"github.com/gocql/gocql.(*hostConnPool).fill", dialgate.Pool, false},
		{"github.com/cqlcontrol/cqlcontrol/controlconn.(*controlConn).dial", dialgate.Pool, false},
	} {
		k, ok := controlConnKind(c.name)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.kind, k, c.name)
	}
}
