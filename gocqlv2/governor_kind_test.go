package gocqlv2

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/leakcheck"
)

// v2ControlConnPrefix is the name prefix by which controlconn's governor tells gocql v2's
// control connection from its pools (controlconn's gocqlV2ControlConn: the same string).
const v2ControlConnPrefix = "github.com/apache/cassandra-gocql-driver/v2.(*controlConn)."

// frameDialer counts gocql v2's dials and setup ends by whether the calling goroutine's stack
// has a frame of v2's control connection, as the governor looks for one.
type frameDialer struct {
	inner gocql.HostDialer
	mu    sync.Mutex
	dials map[bool]int
	ends  map[bool]int
}

func fromControlConn() bool {
	var pcs [24]uintptr
	n := runtime.Callers(2, pcs[:])
	for _, pc := range pcs[:n] {
		if f := runtime.FuncForPC(pc - 1); f != nil && strings.HasPrefix(f.Name(), v2ControlConnPrefix) {
			return true
		}
	}
	return false
}

func (d *frameDialer) DialHost(ctx context.Context, host *gocql.HostInfo) (*gocql.DialedHost, error) {
	c := fromControlConn()
	d.mu.Lock()
	d.dials[c]++
	d.mu.Unlock()
	return d.inner.DialHost(ctx, host)
}

func (d *frameDialer) ObserveConnect(gocql.ObservedConnect) {
	c := fromControlConn()
	d.mu.Lock()
	d.ends[c]++
	d.mu.Unlock()
}

// gocql v2.1.2 dials its control connection from methods named with the prefix the governor
// looks for, and reports their setups' ends on the same goroutine; its pools' dials have no
// such frame. One session on 3 nodes: the control connection's 3 setups (v2 discovers the
// protocol version over two of them, then connects) and NumConns (2) pool setups per node. Checked to fail with the prefix
// changed to v1's (no frame matches).
func TestV2ControlConnectionFramesNamed(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim, err := cqlsim.StartInMemory(cqlsim.Config{Nodes: 3, ReleaseVersion: "3.11.17"})
		require.NoError(t, err)
		defer func() { assert.NoError(t, sim.Close()) }()
		cluster := simCluster(sim)
		cluster.Logger = gocql.NewLogger(gocql.LogLevelNone)
		d := &frameDialer{inner: v2HostDialer(cluster, nil), dials: map[bool]int{}, ends: map[bool]int{}}
		cluster.HostDialer = d
		cluster.ConnectObserver = d
		session, err := cluster.CreateSession()
		require.NoError(t, err)
		defer session.Close()
		time.Sleep(5 * time.Second) // virtual: every pool filled
		synctest.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		assert.Equal(t, 3, d.dials[true], "the control connection's dials")
		assert.Equal(t, 3, d.ends[true], "the control connection's setups")
		assert.Equal(t, 6, d.dials[false], "two pool connections to each of 3 nodes")
		assert.Equal(t, 6, d.ends[false])
	})
}

// simCluster is a gocql v2 config for sim's nodes, dialled in memory.
func simCluster(sim *cqlsim.Cluster) *gocql.ClusterConfig {
	var ips []string
	for _, n := range sim.Nodes() {
		ips = append(ips, n.IP().String())
	}
	cluster := gocql.NewCluster(ips...)
	cluster.Port = sim.Port()
	cluster.Dialer = sim
	return cluster
}
