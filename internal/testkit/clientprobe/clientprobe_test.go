package clientprobe

import (
	"context"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// A real gocql session against cqlsim: its control connection's dials and its pools' are told
// apart, a dial of the test's own counts as ours, and a pinned query reaches its host only.
func TestCallerOfGocqlSession(t *testing.T) {
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 3})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })

	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port()
	cluster.NumConns = 2
	cluster.ProtoVersion = 4 // no protocol discovery: its probe dial is the control connection's too
	cluster.Logger = log.New(io.Discard, "", 0)
	dials := &Dialer{Timeout: 2 * time.Second}
	connects := &Connects{}
	pin := NewHostPin(gocql.RoundRobinHostPolicy())
	cluster.Dialer, cluster.ConnectObserver, cluster.PoolConfig.HostSelectionPolicy = dials, connects, pin
	start := time.Now()
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)

	// gocql dials its control connection once, then NumConns per host; pools fill in the
	// background.
	require.Eventually(t, func() bool { return dials.In(start, time.Now()).GocqlPool >= 6 }, 10*time.Second, 10*time.Millisecond)
	c := dials.In(start, time.Now())
	assert.Equal(t, 1, c.GocqlControl, "gocql's control connection dials once: %+v", c)
	assert.Equal(t, 0, c.Ours, "%+v", c)
	assert.Equal(t, c.GocqlControl+c.GocqlPool, c.Total())

	conn, err := dials.DialContext(context.Background(), "tcp", sim.ContactPoints()[0])
	if err == nil {
		_ = conn.Close()
	}
	assert.Equal(t, 1, dials.In(start, time.Now().Add(time.Second)).Ours, "a dial of the test's own is ours")
	assert.Equal(t, 0, dials.In(time.Now().Add(time.Second), time.Now().Add(2*time.Second)).Total(), "[from, to) excludes later dials")
	all := dials.Dials(start, time.Now().Add(time.Second))
	require.Len(t, all, c.Total()+1)
	assert.Equal(t, GocqlControl, all[0].By, "gocql dials its control connection first")
	assert.Equal(t, Ours, all[len(all)-1].By)
	assert.Equal(t, sim.ContactPoints()[0], all[len(all)-1].Addr)

	// ObserveConnect runs once a connection is set up, after its dial.
	require.Eventually(t, func() bool { return len(connects.All()) >= 7 }, 10*time.Second, 10*time.Millisecond)
	byCaller := map[Caller]int{}
	for _, o := range connects.All() {
		require.NoError(t, o.Err)
		assert.False(t, o.End.Before(o.Start))
		byCaller[o.By]++
	}
	assert.Equal(t, 1, byCaller[GocqlControl], "%v", byCaller)
	assert.GreaterOrEqual(t, byCaller[GocqlPool], 6, "%v", byCaller)

	for _, cp := range sim.ContactPoints() {
		ip, _, err := net.SplitHostPort(cp)
		require.NoError(t, err)
		var rpc net.IP
		err = session.Query("SELECT rpc_address FROM system.local").WithContext(WithHost(context.Background(), ip)).Scan(&rpc)
		require.NoError(t, err, ip)
		assert.Equal(t, ip, rpc.String(), "the query pinned to %s was answered by that host", ip)
	}
	err = session.Query("SELECT rpc_address FROM system.local").WithContext(WithHost(context.Background(), "127.9.9.9")).Exec()
	assert.Error(t, err, "a query pinned to an unknown host is offered no host")
}

func TestCallerString(t *testing.T) {
	assert.Equal(t, "ours", Ours.String())
	assert.Equal(t, "gocql-control", GocqlControl.String())
	assert.Equal(t, "gocql-pool", GocqlPool.String())
}

func TestStampsIn(t *testing.T) {
	var s Stamps
	t0 := time.Unix(100, 0)
	for i := range 5 {
		s.Add(t0.Add(time.Duration(i) * time.Second))
	}
	assert.Equal(t, 2, s.In(t0.Add(time.Second), t0.Add(3*time.Second)), "[1 s, 3 s) holds 1 s and 2 s")
	assert.Equal(t, 5, s.In(t0, t0.Add(time.Hour)))
	assert.Equal(t, 0, s.In(t0.Add(-time.Hour), t0))
}
