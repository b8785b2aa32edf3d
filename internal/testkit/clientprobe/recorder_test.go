package clientprobe

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// A real ControlConnection on a 2-node cluster in memory, in virtual time: up 31 s (one
// heartbeat at 30 s), the whole cluster down 20 s, then back. The Recorder's queries tell that
// story, its dials are the ones that reached the cluster, and Next saw every event.
func TestRecorderThroughAnOutage(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim, err := cqlsim.StartInMemory(cqlsim.Config{Nodes: 2})
		require.NoError(t, err)
		defer func() { require.NoError(t, sim.Close()) }()
		var ips []string
		for _, n := range sim.Nodes() {
			ips = append(ips, n.IP().String())
		}
		next := &countingObserver{}
		rec := &Recorder{Next: next, NextConn: next.observer()}
		cc, err := controlconn.New(&gocql.ClusterConfig{Hosts: ips, Port: sim.Port(), Dialer: sim},
			controlconn.Cadence{}, // the default cadence
			ccopt.Bare[controlconn.Option](), controlconn.WithObserver(rec.Observer()), controlconn.WithReconnectObserver(rec))
		require.NoError(t, err)
		defer func() { assert.NoError(t, cc.Close()) }()

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, cc.Start(ctx))
		time.Sleep(controlconn.Cadence{}.WithDefaults().HeartbeatInterval + time.Second)

		downAt := time.Now()
		dialsBefore := len(sim.Dials())
		sim.StopAll()
		time.Sleep(20 * time.Second)
		synctest.Wait() // every dial of this instant made
		readyAt := time.Now()
		dialsWhileDown := len(sim.Dials()) - dialsBefore
		require.NoError(t, sim.StartAll())
		for cc.Status().ConnectedSince.Before(readyAt) {
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait() // the Recovered report follows Connected

		conns, losses := rec.Connections(), rec.Losses()
		require.Len(t, conns, 2, "connected at start and after the outage")
		assert.True(t, between(conns[0].At, start, downAt))
		assert.False(t, conns[1].At.Before(readyAt))
		require.Len(t, losses, 1)
		assert.Equal(t, conns[0].Endpoint, losses[0].Endpoint)
		assert.True(t, between(losses[0].At, downAt, readyAt))
		assert.Error(t, losses[0].Err)

		down := rec.AttemptsIn(downAt, readyAt)
		require.NotEmpty(t, down, "attempts while the cluster was down")
		for _, a := range down {
			assert.Equal(t, reconnect.OutcomeFailure, a.Outcome, "%+v", a)
			assert.Error(t, a.Err)
			assert.False(t, a.Finished.Before(a.Started))
		}
		dials := rec.DialsIn(downAt, readyAt)
		assert.Len(t, dials, dialsWhileDown, "the recorder's dials while down are the ones that reached the cluster")
		assert.GreaterOrEqual(t, len(dials), len(down), "each attempt dials at least one host")
		for _, d := range dials {
			assert.Error(t, d.Err, "%+v", d)
		}
		won, ok := rec.WinningDial(readyAt)
		require.True(t, ok)
		assert.Equal(t, conns[1].Endpoint.Addr, won.Endpoint.Addr, "the winning dial is the connection's")
		assert.NoError(t, won.Err)

		rc, ok := rec.LastRecovered()
		require.True(t, ok)
		all := rec.Recoveries()
		require.Len(t, all, 2, "the start reports a recovery too")
		assert.Equal(t, conns[0].At, all[0].ConnectedAt)
		assert.Equal(t, rc, all[1])
		assert.Equal(t, losses[0].At, rc.LostAt)
		assert.Equal(t, conns[1].At, rc.ConnectedAt)
		assert.Len(t, rec.AttemptsIn(rc.LostAt, rc.ConnectedAt), rc.Attempts, "the recovery's attempts, the successful one included")
		assert.False(t, rc.ReArmed, "no gocql, no evidence")
		accepted, suppressed := rec.ReArms()
		assert.Zero(t, accepted+suppressed)
		assert.Zero(t, rec.CappedDelays(), "a 20 s outage stays under DelayCap")

		okBeats, failedBeats := rec.HeartbeatsIn(start, downAt)
		assert.Equal(t, 1, okBeats, "one heartbeat in 31 s, at 30 s")
		assert.Zero(t, failedBeats)
		assert.Positive(t, rec.RefreshesIn(start, conns[0].At), "the first refresh comes before Connected")
		assert.Zero(t, rec.RefreshesIn(downAt, readyAt), "no refresh while down")

		// Windows are closed: an attempt at a window's end counts.
		last := down[len(down)-1]
		assert.Len(t, rec.AttemptsIn(last.Started, last.Started), 1)
		assert.Empty(t, rec.AttemptsIn(last.Started.Add(time.Nanosecond), readyAt), "and one a nanosecond before the window does not")

		// Next saw every event the Recorder recorded, and the cap (an optional interface).
		next.mu.Lock()
		defer next.mu.Unlock()
		assert.Equal(t, len(rec.Dials()), next.dials)
		assert.Equal(t, len(rec.Attempts()), next.attempts)
		assert.Equal(t, len(conns), next.connected)
		assert.Equal(t, len(losses), next.lost)
		assert.Equal(t, len(all), next.recovered)
		assert.Equal(t, reconnect.DefaultDelayCap, next.delayCap)
	})
}

// Forwarding is optional: a Recorder without Next records alone, and the optional events go
// nowhere.
func TestRecorderWithoutNext(t *testing.T) {
	var rec Recorder
	rec.DialStarted(controlconn.Endpoint{Addr: "a"})
	rec.DialStarted(controlconn.Endpoint{Addr: "a"})
	rec.DialFinished(controlconn.Endpoint{Addr: "a"}, nil, time.Millisecond)
	rec.Connected(controlconn.Endpoint{Addr: "a"}, primitive.ProtocolVersion4)
	rec.DelayCapSet(time.Second)
	obs := rec.Observer()
	assert.Nil(t, obs.DataPathLag, "nothing to forward to")
	assert.Nil(t, obs.ServerEvent)
	rec.StateChanged(reconnect.StateScheduled, reconnect.StateConnected)

	dials := rec.Dials()
	require.Len(t, dials, 2)
	assert.True(t, dials[0].Finished.IsZero(), "DialFinished completes the latest dial of the host in flight")
	assert.Equal(t, time.Millisecond, dials[1].Took)
	won, ok := rec.WinningDial(dials[0].Started)
	require.True(t, ok)
	assert.Equal(t, dials[1], won)
	assert.Len(t, rec.Connections(), 1)
}

// countingObserver is a Recorder's Next: it counts what it is given.
type countingObserver struct {
	reconnect.NopObserver

	mu                                          sync.Mutex
	dials, attempts, connected, lost, recovered int
	delayCap                                    time.Duration
}

// observer is c as a controlconn.Observer.
func (c *countingObserver) observer() controlconn.Observer {
	return controlconn.Observer{DialStarted: c.DialStarted, Connected: c.Connected, Lost: c.Lost}
}

func (c *countingObserver) count(n *int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*n++
}

func (c *countingObserver) DialStarted(controlconn.Endpoint) { c.count(&c.dials) }
func (c *countingObserver) AttemptStarted(reconnect.Attempt) { c.count(&c.attempts) }
func (c *countingObserver) Connected(controlconn.Endpoint, primitive.ProtocolVersion) {
	c.count(&c.connected)
}
func (c *countingObserver) Lost(controlconn.Endpoint, error, time.Duration) { c.count(&c.lost) }
func (c *countingObserver) Recovered(reconnect.Recovered)                   { c.count(&c.recovered) }

func (c *countingObserver) DelayCapSet(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delayCap = d
}
