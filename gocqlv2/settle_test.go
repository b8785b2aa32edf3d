package gocqlv2

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
)

// gocql v2.1.2's Session.Close deadlocks when it begins while v2's own control connection is
// redialling (docs/gocqlv2-known-issues.md; pinned by internal/closehang). Tests that close a v2
// session just after an outage, when v2's control connection may still be redialling, first
// wait for it to settle, so that they fail on their own contracts and not on that known bug. A
// Close that still hangs once v2 has settled fails the test, with every goroutine's stack.

// The log lines of gocql v2.1.2's controlConn that say whether it is connected.
const (
	v2ControlConnected = "Control connection connected to host."
	v2ControlError     = "Control connection error."
	v2ControlReconnect = "Reconnecting the control connection."
	v2HeartbeatUnsent  = "Control connection failed to send heartbeat."
	v2HeartbeatFailed  = "Control connection heartbeat failed."
)

// v2ControlFrames are the frames on a goroutine's stack while v2's control connection redials
// and sets itself up.
var v2ControlFrames = []string{v2ControlPrefix + "reconnect", v2ControlPrefix + "setupConn"}

// controlWatch is a gocql v2 StructuredLogger that logs nothing, as v2's default
// (LogLevelNone) does, and follows from v2's log lines whether its control connection is
// connected. Set it as the ClusterConfig's Logger.
type controlWatch struct {
	connected atomic.Bool
}

func (w *controlWatch) note(msg string) {
	switch msg {
	case v2ControlConnected:
		w.connected.Store(true)
	case v2ControlError, v2ControlReconnect, v2HeartbeatUnsent, v2HeartbeatFailed:
		w.connected.Store(false)
	}
}

func (w *controlWatch) Error(msg string, _ ...gocql.LogField)   { w.note(msg) }
func (w *controlWatch) Warning(msg string, _ ...gocql.LogField) { w.note(msg) }
func (w *controlWatch) Info(msg string, _ ...gocql.LogField)    { w.note(msg) }
func (w *controlWatch) Debug(msg string, _ ...gocql.LogField)   { w.note(msg) }

// settled reports whether v2's control connection is connected and no goroutine is in its
// redial or setup (where its schema refresh runs after the "connected" line).
func (w *controlWatch) settled() bool {
	if !w.connected.Load() {
		return false
	}
	s := bounded.Stacks()
	for _, f := range v2ControlFrames {
		if strings.Contains(s, f) {
			return false
		}
	}
	return true
}

// v2SettleWithin bounds the wait for v2's control connection to settle before a Close: v2's
// heartbeat redials once a second, so a reachable cluster settles it within a few seconds.
const v2SettleWithin = 30 * time.Second

// closeSettled registers a cleanup that waits (up to v2SettleWithin, polling every 10 ms) for
// w to report v2's control connection settled, then closes session with bounded.Run. A
// control connection that does not settle is logged, and the Close is attempted anyway.
func closeSettled(t testing.TB, what string, session *gocql.Session, w *controlWatch, within time.Duration) {
	t.Helper()
	t.Cleanup(func() {
		start := time.Now()
		for !w.settled() {
			if time.Since(start) > v2SettleWithin {
				t.Logf("%s: gocql v2's control connection did not settle within %v; closing anyway", what, v2SettleWithin)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if waited := time.Since(start); waited >= 10*time.Millisecond {
			t.Logf("%s: waited %v for gocql v2's control connection to settle", what, waited.Round(time.Millisecond))
		}
		bounded.Run(t, what, within, session.Close)
	})
}

// controlWatch follows a real gocql v2.1.2 session's control connection: settled once the
// session is up, unsettled within seconds of a full outage (v2's heartbeat fails, then it
// redials), settled again after the cluster returns. It fails if v2's log lines change.
func TestControlWatchFollowsV2ControlConnection(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 2, ReleaseVersion: release311, BaseIP: "127.0.45.1"})
	cluster := v2Cluster(sim)
	watch := &controlWatch{}
	cluster.Logger = watch
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	closeSettled(t, "gocql v2 Session.Close", session, watch, bounded.CloseWithin)
	require.Eventually(t, watch.settled, 10*time.Second, 10*time.Millisecond, "settled after CreateSession")

	sim.StopAll()
	// v2 logs the closed connection at once ("Control connection error."); failing that, its
	// heartbeat (every 5 s while connected) notices the loss within about 6 s.
	require.Eventually(t, func() bool { return !watch.settled() }, 15*time.Second, 10*time.Millisecond,
		"unsettled after the outage")
	require.NoError(t, sim.StartAll())
	require.Eventually(t, watch.settled, 20*time.Second, 10*time.Millisecond, "settled after the return")
}
