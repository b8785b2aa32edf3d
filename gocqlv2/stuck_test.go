package gocqlv2

// gocql v2.1.2's control connection can get stuck in its reconnect (docs/gocqlv2-known-issues.md):
// its goroutine holds v2's "reconnecting" flag and never returns, so v2 never gets a control
// connection again and hears no topology or status event. Ours is a connection of its own: it
// must keep delivering them.
//
// The stuck state is made deterministic here by holding v2's control-connection redial in the
// Dialer (a dial from a method of v2's controlConn) until the test ends: from the outside it is
// the state the bug leaves v2 in (a reconnect in flight forever), whatever v2 is stuck on.

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// v2Watch is how long TestOursDeliversTopologyWhileV2ControlConnectionIsStuck watches whether
// the v2 session gets the restarted node back by itself.
const v2Watch = 5 * time.Second

// v2ControlPrefix names the methods of gocql v2's control connection on a dialling stack.
const v2ControlPrefix = "github.com/apache/cassandra-gocql-driver/v2.(*controlConn)."

// stuckControlDialer is a process's gocql v2 Dialer (ours dials through it too). It remembers
// the connections v2's control connection made and, once holding, holds every further dial of
// v2's control connection until released; released, they fail as refused. (A held dial that
// went on would race v2's Session.Close into the very hang this file is about.)
type stuckControlDialer struct {
	d       net.Dialer
	release chan struct{} // closed by unhold
	held    chan struct{} // one value per dial held (up to its capacity)

	mu      sync.Mutex
	holding bool       // guarded by mu
	control []net.Conn // connections of v2's control connection; guarded by mu
}

func newStuckControlDialer() *stuckControlDialer {
	return &stuckControlDialer{release: make(chan struct{}), held: make(chan struct{}, 16)}
}

func (s *stuckControlDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	control := v2ControlOnStack()
	s.mu.Lock()
	hold := control && s.holding
	s.mu.Unlock()
	if hold {
		select {
		case s.held <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	nc, err := s.d.DialContext(ctx, network, addr)
	if err == nil && control {
		s.mu.Lock()
		s.control = append(s.control, nc)
		s.mu.Unlock()
	}
	return nc, err
}

// hold holds v2's control-connection dials from now on and closes its connections, as a lost
// connection would: v2 redials, and its redial is held.
func (s *stuckControlDialer) hold() {
	s.mu.Lock()
	s.holding = true
	conns := s.control
	s.control = nil
	s.mu.Unlock()
	for _, nc := range conns {
		_ = nc.Close()
	}
}

// unhold ends the held dials, and fails v2's control-connection dials from then on at once.
func (s *stuckControlDialer) unhold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

func v2ControlOnStack() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, v2ControlPrefix) {
			return true
		}
		if !more {
			return false
		}
	}
}

// awaitChange waits (bounded) for a change of kind about hostID on sub.
func awaitChange(t *testing.T, sub *metadata.Subscription, kind metadata.ChangeKind, hostID string, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case c, ok := <-sub.C():
			require.True(t, ok, "subscription closed")
			if c.Kind == kind && c.Host.HostID() == hostID {
				return
			}
		case <-timeout:
			t.Fatalf("no %s for %s within %v", kind, hostID, within)
		}
	}
}

// While v2's control connection is stuck in its reconnect, a node stops and starts again: ours
// stays connected and delivers host_down and host_up for it (the simulator announces each
// after 100 ms; the bound is 5 s for a loaded machine).
//
// Checked to fail with ours cut off as well (its dials held like v2's, and its connection
// closed): no host_down within the bound.
func TestOursDeliversTopologyWhileV2ControlConnectionIsStuck(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 3, ReleaseVersion: release311, BaseIP: "127.0.47.1",
		GossipDelay: 100 * time.Millisecond, StopAnnounceDelay: 100 * time.Millisecond})
	dialer := newStuckControlDialer()
	cluster := v2Cluster(sim)
	cluster.Dialer = dialer
	// v2's control connection never reconnects here, so the session's Close does not wait for it
	// to settle (attachSession's default): a Logger of the test's own opts out.
	cluster.Logger = gocql.NewLogger(gocql.LogLevelNone)
	cc, session := attachSession(t, cluster, core.Cadence{})
	// Registered after attach's, so it runs first: the held dial ends before Session.Close.
	t.Cleanup(dialer.unhold)

	dialer.hold()
	select {
	case <-dialer.held:
	case <-time.After(10 * time.Second):
		t.Fatal("gocql v2's control connection did not redial within 10 s of losing its connection")
	}

	sub, _, err := cc.Subscribe(64)
	require.NoError(t, err)
	defer sub.Close()
	// A node other than ours's, so that ours stays on its connection throughout.
	var n *cqlsim.Node
	for _, node := range sim.Nodes() {
		if node.Addr() != cc.Status().Host.Addr {
			n = node
			break
		}
	}
	require.NotNil(t, n)

	n.Stop()
	awaitChange(t, sub, metadata.HostDown, n.HostID(), 5*time.Second)
	require.NoError(t, n.Start())
	awaitChange(t, sub, metadata.HostUp, n.HostID(), 5*time.Second)

	// What v2's users see meanwhile: v2 hears no UP without its control connection. Logged, not
	// asserted (it is v2's behaviour, not ours): with gocql v2.1.2 the restarted node did not
	// serve the v2 session again within v2Watch, against about 1 s when v2's control connection
	// is not held.
	watchFrom := time.Now()
	v2Back := "not within " + v2Watch.String()
	for time.Since(watchFrom) < v2Watch {
		if servedBy(session, n) {
			v2Back = "after " + time.Since(watchFrom).Round(time.Millisecond).String()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("FIGURE v2's control connection stuck: ours delivered host_down and host_up; the restarted node served the v2 session again %s of ours's host_up", v2Back)

	st := cc.Status()
	assert.Equal(t, reconnect.StateConnected, st.State, "ours stayed connected")
	assert.Zero(t, st.LastLossAt, "ours never lost its connection")
	select {
	case <-dialer.release:
		t.Fatal("v2's control connection was released before the end")
	default:
	}
	assert.Len(t, dialer.held, 0, "v2 held in one redial: it retries nothing while stuck")
}
