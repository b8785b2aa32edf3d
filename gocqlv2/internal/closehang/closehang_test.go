package closehang

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
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/stretchr/testify/require"
)

const (
	v2        = "github.com/apache/cassandra-gocql-driver/v2."
	v2Control = v2 + "(*controlConn)."
	heartBeat = v2Control + "heartBeat"
	// closeWaits is the frame Session.Close waits in once it has stopped the schema refresher.
	closeWaits = v2Control + "close"
	// refresh is the frame the heartbeat goroutine waits in for a refresh that never comes.
	refresh = v2 + "(*schemaDescriber).refreshSchemaMetadata"
)

// onStack reports whether a function whose name starts with prefix is on the calling stack.
func onStack(prefix string) bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, prefix) {
			return true
		}
		if !more {
			return false
		}
	}
}

// stacks is every goroutine's stack.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// heartbeatHold is the session's Dialer. Once cut, it refuses the control connection's dials,
// except the heartbeat goroutine's redial, which it holds until let is closed and then lets
// through.
type heartbeatHold struct {
	d    net.Dialer
	let  chan struct{}
	held chan struct{} // one value when the heartbeat's redial is held

	mu      sync.Mutex
	cut     bool       // guarded by mu
	control []net.Conn // the control connection's connections; guarded by mu
}

func (h *heartbeatHold) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	control := onStack(v2Control)
	h.mu.Lock()
	cut := h.cut
	h.mu.Unlock()
	if control && cut {
		if !onStack(heartBeat) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		select {
		case h.held <- struct{}{}:
		default:
		}
		select {
		case <-h.let:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	nc, err := h.d.DialContext(ctx, network, addr)
	if err == nil && control {
		h.mu.Lock()
		h.control = append(h.control, nc)
		h.mu.Unlock()
	}
	return nc, err
}

// cutOff closes the control connection's connections and refuses its dials from now on, but the
// heartbeat's.
func (h *heartbeatHold) cutOff() {
	h.mu.Lock()
	h.cut = true
	conns := h.control
	h.mu.Unlock()
	for _, nc := range conns {
		_ = nc.Close()
	}
}

// The sequence: the control connection is lost; the reader's redial is refused; a second later
// the heartbeat goroutine redials, and its dial is held. Session.Close starts: it stops the
// schema refresher, then waits in controlConn.close for the heartbeat goroutine. The held dial
// goes through; the heartbeat's setupConn asks the stopped refresher for a refresh and waits
// forever, and so does Close.
//
// It pins gocql v2.1.2's behaviour: if Close returns, the bug is fixed, and
// docs/gocqlv2-known-issues.md must say so.
func TestV2SessionCloseHangsWhenItBeginsDuringAHeartbeatRedial(t *testing.T) {
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 1, ReleaseVersion: "3.11.17", BaseIP: "127.0.48.1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	hold := &heartbeatHold{let: make(chan struct{}), held: make(chan struct{}, 1)}
	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port()
	cluster.ConnectTimeout, cluster.Timeout = 2*time.Second, 2*time.Second
	cluster.Dialer = hold
	session, err := cluster.CreateSession()
	require.NoError(t, err)

	hold.cutOff()
	select {
	case <-hold.held:
	case <-time.After(15 * time.Second):
		t.Fatal("the heartbeat goroutine did not redial within 15 s of the loss")
	}

	// Counted, so that goroutines an earlier run (-count) left behind do not count.
	waiting := strings.Count(stacks(), closeWaits)
	refreshing := strings.Count(stacks(), refresh)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		session.Close()
	}()
	// Close has stopped the schema refresher once it waits in controlConn.close (a bounded poll
	// of the goroutines' stacks).
	require.Eventually(t, func() bool { return strings.Count(stacks(), closeWaits) > waiting }, 10*time.Second,
		5*time.Millisecond, "Session.Close did not reach controlConn.close")
	close(hold.let)

	select {
	case <-closed:
		t.Fatal("gocql v2's Session.Close returned: the deadlock is fixed in this version; update docs/gocqlv2-known-issues.md and this test")
	case <-time.After(5 * time.Second):
	}
	s := stacks()
	require.Greater(t, strings.Count(s, refresh), refreshing, "the heartbeat waits for a refresh; stacks:\n%s", s)
	t.Log("gocql v2 Session.Close still waiting 5 s after the heartbeat's redial went through, as expected of v2.1.2 (its goroutines are left behind)")
}
