package cqlconn

// Regressions these tests catch (each was run against the code before the fix and failed):
//
//   - A request whose context had already expired was written with that deadline in the past:
//     "write: i/o timeout" ended the connection (a flap with backoff):
//     TestExpiredContextDoesNotHarmTheConnection.
//   - A user's write stuck on a peer that stopped reading held the write lock for its whole
//     write timeout, so the heartbeat detected the dead peer only after it:
//     TestStuckWriteDoesNotDelayTheHeartbeat (before the fix it never completed: the heartbeat
//     waited on a sync.Mutex, which is not a durable block, so the bubble's clock stopped).

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpiredContextDoesNotHarmTheConnection(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		defer func() { assert.NoError(t, sim.Close()) }()
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{Dialer: sim, HeartbeatInterval: -1})
		require.NoError(t, err)
		defer func() { _ = c.Close() }()

		expired, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		time.Sleep(2 * time.Millisecond)
		_, err = c.Query(expired, "SELECT * FROM system.local")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NoError(t, c.Err(), "the caller's expired context did not end the connection")

		canceled, cancel2 := context.WithCancel(context.Background())
		cancel2()
		_, err = c.Do(canceled, &message.Options{})
		assert.ErrorIs(t, err, context.Canceled)
		assert.NoError(t, c.Err())

		_, err = c.Do(context.Background(), &message.Options{})
		assert.NoError(t, err, "the connection still serves")
	})
}

// stallDialer dials through the in-memory cluster sim; once stall is set, writes on its connections block until their
// write deadline, as on a peer that stopped reading with full socket buffers.
type stallDialer struct {
	sim   Dialer
	stall atomic.Bool
}

func (d *stallDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.sim.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: nc, d: d}, nil
}

type stallConn struct {
	net.Conn
	d        *stallDialer
	mu       sync.Mutex
	deadline time.Time
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) Write(b []byte) (int, error) {
	if !c.d.stall.Load() {
		return c.Conn.Write(b)
	}
	c.mu.Lock()
	dl := c.deadline
	c.mu.Unlock()
	if dl.IsZero() {
		select {} // never: every write has a deadline
	}
	time.Sleep(time.Until(dl))
	return 0, os.ErrDeadlineExceeded
}

func TestStuckWriteDoesNotDelayTheHeartbeat(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		defer func() { assert.NoError(t, sim.Close()) }()
		d := &stallDialer{sim: sim}
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{
			Dialer: d, HeartbeatInterval: 30 * time.Second, HeartbeatTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second,
		})
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		start := time.Now()

		time.Sleep(29 * time.Second)
		d.stall.Store(true) // the peer stops reading
		go func() { _, _ = c.Do(context.Background(), &message.Options{}) }()
		select {
		case <-c.Done():
		case <-time.After(time.Minute):
			t.Fatal("never lost")
		}
		lost := time.Since(start)
		t.Logf("peer stopped reading at 29 s: connection lost at %v", lost)
		assert.LessOrEqual(t, lost, 35*time.Second, "within HeartbeatInterval + HeartbeatTimeout")
		assert.ErrorIs(t, c.Err(), ErrHeartbeat)
		time.Sleep(10 * time.Second) // let the stuck write reach its deadline
	})
}
