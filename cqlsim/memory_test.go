package cqlsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/datastax/go-cassandra-native-protocol/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// The in-memory transport: the same cluster, on net.Pipe instead of sockets, inside synctest
// bubbles, so every delay below is exact virtual time.

func startInMemory(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c, err := StartInMemory(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// dialMemory opens a frame client on node addr through the cluster's in-memory network.
func dialMemory(t *testing.T, c *Cluster, addr string) *frameClient {
	t.Helper()
	nc, err := c.DialContext(context.Background(), "tcp", addr)
	require.NoError(t, err)
	return frameClientOn(t, nc, primitive.ProtocolVersion4)
}

func isUp(ip net.IP) func(message.Event) bool {
	return statusIs(primitive.StatusChangeTypeUp, ip)
}

func statusIs(change primitive.StatusChangeType, ip net.IP) func(message.Event) bool {
	return func(ev message.Event) bool {
		sc, ok := ev.(*message.StatusChangeEvent)
		return ok && sc.ChangeType == change && sc.Address.Addr.Equal(ip)
	}
}

func TestInMemoryHandshakeAndSystemTables(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 3, ReleaseVersion: "4.0.11"})
		assert.Equal(t, []string{"127.0.0.1:9042", "127.0.0.2:9042", "127.0.0.3:9042"}, c.ContactPoints())
		fc := dialMemory(t, c, c.Node(1).Addr())
		fc.handshake(primitive.EventTypeStatusChange)

		local := fc.rows("SELECT host_id, rpc_address, release_version FROM system.local WHERE key='local'")
		require.Len(t, local.Data, 1)
		assert.Equal(t, c.Node(1).HostID(), uuidString(primitive.UUID(cells(t, local, "host_id")[0])))
		assert.Equal(t, net.IP(cells(t, local, "rpc_address")[0]).String(), "127.0.0.2")
		assert.Equal(t, "4.0.11", string(cells(t, local, "release_version")[0]))
		peers := fc.rows("SELECT peer FROM system.peers_v2")
		var listed []string
		for _, p := range cells(t, peers, "peer") {
			listed = append(listed, net.IP(p).String())
		}
		assert.ElementsMatch(t, []string{"127.0.0.1", "127.0.0.3"}, listed)

		n := c.Node(1)
		assert.Equal(t, 1, n.Requests(primitive.OpCodeOptions))
		assert.Equal(t, 1, n.Requests(primitive.OpCodeStartup))
		assert.Equal(t, 1, n.Requests(primitive.OpCodeRegister))
		assert.Equal(t, 2, n.Requests(primitive.OpCodeQuery))
		assert.Equal(t, 1, n.Conns())
		assert.Equal(t, 0, c.Node(0).Conns())
		accepted := c.Events()[len(c.Events())-1]
		assert.Equal(t, EventAccepted, accepted.Kind)
		assert.Equal(t, fc.conn.LocalAddr().String(), accepted.Client, "the record names the client's end")

		_, err := c.DialContext(context.Background(), "tcp", "127.0.0.9:9042")
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, "no node at that address")
		assert.Equal(t, []string{"127.0.0.2:9042", "127.0.0.9:9042"}, c.Dials(), "every dial, refused ones too")
	})
}

// A stop refuses dials at once, drops the connections with EOF and is announced exactly
// StopAnnounceDelay later; the start is announced exactly GossipDelay after the port opens.
func TestInMemoryStopAndStartAnnouncedOnTime(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 2})
		watcher := dialMemory(t, c, c.Node(0).Addr())
		watcher.handshake(primitive.EventTypeStatusChange)
		victim := dialMemory(t, c, c.Node(1).Addr())
		victim.handshake()
		ip := c.Node(1).IP()

		stopped := time.Now()
		c.Node(1).Stop()
		assert.ErrorIs(t, readErr(victim, time.Hour), io.EOF)
		assert.Zero(t, time.Since(stopped), "the connection drops at once")
		_, err := c.DialContext(context.Background(), "tcp", c.Node(1).Addr())
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		watcher.awaitEvent(time.Hour, statusIs(primitive.StatusChangeTypeDown, ip))
		assert.Equal(t, DefaultStopAnnounceDelay, time.Since(stopped))

		started := time.Now()
		require.NoError(t, c.Node(1).Start())
		again := dialMemory(t, c, c.Node(1).Addr())
		again.handshake()
		watcher.awaitEvent(time.Hour, isUp(ip))
		assert.Equal(t, DefaultGossipDelay, time.Since(started))
	})
}

// A kill drops the connections at once (EOF: a pipe has no RST) and is announced DOWN only when
// the failure detector convicts the node, KillDetectDelay later.
func TestInMemoryKillAnnouncedAfterDetection(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 2, KillDetectDelay: 7 * time.Second})
		watcher := dialMemory(t, c, c.Node(0).Addr())
		watcher.handshake(primitive.EventTypeStatusChange)
		victim := dialMemory(t, c, c.Node(1).Addr())
		victim.handshake()

		killed := time.Now()
		c.Node(1).Kill()
		assert.ErrorIs(t, readErr(victim, time.Hour), io.EOF)
		assert.Equal(t, StateKilled, c.Node(1).State())
		watcher.awaitEvent(time.Hour, statusIs(primitive.StatusChangeTypeDown, c.Node(1).IP()))
		assert.Equal(t, 7*time.Second, time.Since(killed))
		closed := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventClosed && e.Node == 1 })
		assert.Equal(t, CloseKill, closed.Detail)
	})
}

// A blackholed node: a dial waits for its caller's deadline and fails with a timeout; a
// connection already open gets no answer until the blackhole ends.
func TestInMemoryBlackhole(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1})
		open := dialMemory(t, c, c.Node(0).Addr())
		open.handshake()
		c.Node(0).Blackhole(true)

		begin := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.DialContext(ctx, "tcp", c.Node(0).Addr())
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var timeout net.Error
		assert.True(t, errors.As(err, &timeout) && timeout.Timeout(), "%v", err)
		assert.Equal(t, 5*time.Second, time.Since(begin), "the dial hung until its deadline")

		id := open.send(&message.Options{})
		_, err = open.recv(time.Minute)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no answer while blackholed")
		c.Node(0).Blackhole(false)
		f, err := open.recv(time.Second)
		require.NoError(t, err)
		assert.Equal(t, id, f.Header.StreamId, "the held request is answered once healed")
		assert.Equal(t, 5*time.Second+time.Minute, time.Since(begin))
		healed := dialMemory(t, c, c.Node(0).Addr())
		healed.handshake()
	})
}

// Deadlines work on pipes: the server's idle timeout closes a quiet connection on the dot.
func TestInMemoryIdleTimeout(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1, IdleTimeout: 30 * time.Second})
		fc := dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		begin := time.Now()
		assert.ErrorIs(t, readErr(fc, time.Hour), io.EOF)
		assert.Equal(t, 30*time.Second, time.Since(begin))
		closed := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventClosed })
		assert.Equal(t, CloseIdle, closed.Detail)
	})
}

// A full stop closes every port before any connection drops: a client that reconnects the
// moment its connection drops finds no node to move to. Without the ports closed first, the
// redial below reaches node 1 while node 0 is stopping (checked by stopping one node at a time).
func TestInMemoryStopAllRefusesBeforeDropping(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 3})
		fc := dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		redialed := make(chan error, 1)
		go func() {
			_, _ = fc.br.ReadByte() // the drop
			nc, err := c.DialContext(context.Background(), "tcp", c.Node(2).Addr())
			if err == nil {
				_ = nc.Close()
			}
			redialed <- err
		}()
		synctest.Wait()
		c.StopAll()
		assert.ErrorIs(t, <-redialed, syscall.ECONNREFUSED)
		for _, n := range c.Nodes() {
			assert.Equal(t, StateDown, n.State())
		}
	})
}

// A muted node accepts connections and holds their requests; gossip still believes it up.
func TestInMemoryMuteHoldsRequests(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 2})
		watcher := dialMemory(t, c, c.Node(0).Addr())
		watcher.handshake(primitive.EventTypeStatusChange)
		c.Node(1).Mute(true)
		begin := time.Now()
		fc := dialMemory(t, c, c.Node(1).Addr())
		id := fc.send(&message.Options{})
		_, err := fc.recv(time.Hour)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "held for an hour")
		assert.Equal(t, time.Hour, time.Since(begin))
		assert.Empty(t, watcher.events(time.Nanosecond), "no DOWN: gossip sees nothing wrong")
		assert.Equal(t, StateUp, c.Node(1).State())
		assert.Equal(t, 1, c.Node(1).Conns())

		c.Node(1).Mute(false)
		f, err := fc.recv(time.Second)
		require.NoError(t, err)
		assert.Equal(t, id, f.Header.StreamId)
		assert.Equal(t, 1, c.Node(1).Requests(primitive.OpCodeOptions))
	})
}

// Push makes a node send what a test tells it to, to connections registered for it only.
func TestInMemoryPushReachesRegisteredConnections(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 2})
		registered := dialMemory(t, c, c.Node(0).Addr())
		registered.handshake(primitive.EventTypeStatusChange)
		other := dialMemory(t, c, c.Node(0).Addr())
		other.handshake(primitive.EventTypeSchemaChange)
		lie := &message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeDown,
			Address: &primitive.Inet{Addr: c.Node(1).IP(), Port: int32(c.Port())}}
		c.Node(0).Push(lie)
		got := registered.awaitEvent(time.Second, statusIs(primitive.StatusChangeTypeDown, c.Node(1).IP()))
		assert.Equal(t, lie.Address.Port, got.(*message.StatusChangeEvent).Address.Port)
		assert.Empty(t, other.events(time.Second), "not registered for STATUS_CHANGE")
		assert.Equal(t, StateUp, c.Node(1).State(), "a lie changes nothing")
	})
}

// Selected counts the SELECTs of each table, refused ones too: a 3.11 node has no peers_v2.
func TestInMemorySelectedCountsTables(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 2})
		fc := dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		fc.rows("SELECT * FROM system.local WHERE key='local'")
		assert.IsType(t, &message.Invalid{}, fc.query("SELECT * FROM system.peers_v2"))
		fc.rows("SELECT * FROM system.peers")
		fc.rows("SELECT peer FROM system.peers")
		assert.Equal(t, 1, c.Selected("system.local"))
		assert.Equal(t, 1, c.Selected("system.peers_v2"))
		assert.Equal(t, 2, c.Selected("system.peers"))
		assert.Equal(t, 0, c.Selected("system_schema.tables"))
	})
}

// A frame the node cannot read gets a protocol error on stream 0, then the connection closes;
// a client that goes away mid-frame is closed quietly.
func TestInMemoryUnreadableFramesCloseTheConnection(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1, ReleaseVersion: "4.0.11"})
		rejected := func(fc *frameClient, raw []byte, want string) {
			t.Helper()
			_, err := fc.conn.Write(raw)
			require.NoError(t, err)
			f, err := fc.recv(time.Second)
			require.NoError(t, err)
			perr, ok := f.Body.Message.(*message.ProtocolError)
			require.True(t, ok, "%v", f.Body.Message)
			assert.Contains(t, perr.ErrorMessage, want)
			assert.EqualValues(t, 0, f.Header.StreamId)
			assert.ErrorIs(t, readErr(fc, time.Second), io.EOF, "closed after the error")
		}
		v3Options := []byte{0x03, 0, 0, 7, byte(primitive.OpCodeOptions), 0, 0, 0, 0}
		fc := dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		rejected(fc, v3Options, "Invalid message version. Got 3 but previous messages on this connection had version 4")

		fc = dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		rejected(fc, []byte{0x09, 0, 0, 7, byte(primitive.OpCodeOptions), 0, 0, 0, 0}, "9")

		// v5: a segment whose header checksum is wrong.
		nc, err := c.DialContext(context.Background(), "tcp", c.Node(0).Addr())
		require.NoError(t, err)
		fc = frameClientOn(t, nc, primitive.ProtocolVersion5)
		fc.handshake()
		rejected(fc, []byte{1, 0, 0, 0, 0, 0}, "cannot decode segment header")

		fc = dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		_, err = fc.conn.Write(v3Options[:5])
		require.NoError(t, err)
		require.NoError(t, fc.conn.Close())
		closed := awaitEvent(t, c, time.Second, func(e Event) bool {
			return e.Kind == EventClosed && e.Client == fc.conn.LocalAddr().String()
		})
		assert.Equal(t, CloseClient, closed.Detail)
	})
}

// A v5 request bigger than a segment arrives in several, and is answered once whole.
func TestInMemoryV5RequestSpreadOverSegments(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1, ReleaseVersion: "4.0.11"})
		nc, err := c.DialContext(context.Background(), "tcp", c.Node(0).Addr())
		require.NoError(t, err)
		fc := frameClientOn(t, nc, primitive.ProtocolVersion5)
		fc.handshake()
		q := "SELECT release_version FROM system.local /* " + strings.Repeat("x", 200<<10) + " */"
		var buf bytes.Buffer
		require.NoError(t, fc.codec.EncodeFrame(frame.NewFrame(primitive.ProtocolVersion5, 9,
			&message.Query{Query: q, Options: &message.QueryOptions{}}), &buf))
		data := buf.Bytes()
		var segments bytes.Buffer
		for parts := 0; len(data) > 0; parts++ {
			n := min(len(data), segment.MaxPayloadLength)
			require.NoError(t, fc.seg.EncodeSegment(&segment.Segment{Header: &segment.Header{IsSelfContained: false},
				Payload: &segment.Payload{UncompressedData: data[:n]}}, &segments))
			data = data[n:]
		}
		_, err = fc.conn.Write(segments.Bytes())
		require.NoError(t, err)
		f, err := fc.recv(time.Second)
		require.NoError(t, err)
		assert.EqualValues(t, 9, f.Header.StreamId)
		rows, ok := f.Body.Message.(*message.RowsResult)
		require.True(t, ok, "%v", f.Body.Message)
		assert.Equal(t, "4.0.11", string(rows.Data[0][0]))
	})
}

// ServeConn serves a connection the node did not accept itself, while it is up.
func TestInMemoryServeConn(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1})
		client, server := net.Pipe()
		c.Node(0).ServeConn(server)
		fc := frameClientOn(t, client, primitive.ProtocolVersion4)
		fc.handshake()
		assert.Equal(t, 1, c.Node(0).Conns())

		c.Node(0).Stop()
		client, server = net.Pipe()
		c.Node(0).ServeConn(server)
		assert.ErrorIs(t, readErr(frameClientOn(t, client, primitive.ProtocolVersion4), time.Second), io.EOF, "a stopped node closes it")
	})
}
