package cqlsim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/datastax/go-cassandra-native-protocol/segment"
	"github.com/stretchr/testify/require"
)

// frameClient is a minimal native-protocol client on a raw socket, for asserting what a node sends.
type frameClient struct {
	t         *testing.T
	conn      *net.TCPConn
	br        *bufio.Reader
	version   primitive.ProtocolVersion
	codec     frame.RawCodec
	seg       segment.Codec
	modern    bool                 // v5 segments after READY/AUTHENTICATE
	beta      bool                 // set USE_BETA on requests; no segments (3.11's v5 beta)
	lastFlags primitive.HeaderFlag // flags of the last frame received
	stream    int16
	pending   []message.Event // events read while waiting for a response
}

func dialFrames(t *testing.T, addr string, v primitive.ProtocolVersion) *frameClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp4", addr, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &frameClient{t: t, conn: nc.(*net.TCPConn), br: bufio.NewReader(nc), version: v,
		codec: frame.NewRawCodec(), seg: segment.NewCodec()}
}

// send writes a request and returns its stream id.
func (fc *frameClient) send(m message.Message) int16 {
	fc.t.Helper()
	fc.stream++
	f := frame.NewFrame(fc.version, fc.stream, m)
	if fc.beta {
		f.Header.Flags = f.Header.Flags.Add(primitive.HeaderFlagUseBeta)
	}
	var buf bytes.Buffer
	require.NoError(fc.t, fc.codec.EncodeFrame(f, &buf))
	if fc.modern {
		var out bytes.Buffer
		require.NoError(fc.t, fc.seg.EncodeSegment(&segment.Segment{
			Header:  &segment.Header{IsSelfContained: true},
			Payload: &segment.Payload{UncompressedData: buf.Bytes()},
		}, &out))
		buf = out
	}
	_, err := fc.conn.Write(buf.Bytes())
	require.NoError(fc.t, err)
	return fc.stream
}

// recv reads the next frame within d.
func (fc *frameClient) recv(d time.Duration) (*frame.Frame, error) {
	_ = fc.conn.SetReadDeadline(time.Now().Add(d))
	defer func() { _ = fc.conn.SetReadDeadline(time.Time{}) }()
	if fc.modern {
		var data []byte
		for {
			s, err := fc.seg.DecodeSegment(fc.br)
			if err != nil {
				return nil, err
			}
			data = append(data, s.Payload.UncompressedData...)
			if s.Header.IsSelfContained {
				break
			}
			if len(data) >= 9 && len(data) >= 9+int(binary.BigEndian.Uint32(data[5:9])) {
				break // the last part of a frame spread over segments
			}
		}
		return fc.remember(fc.codec.DecodeFrame(bytes.NewReader(data)))
	}
	return fc.remember(fc.codec.DecodeFrame(fc.br))
}

func (fc *frameClient) remember(f *frame.Frame, err error) (*frame.Frame, error) {
	if err == nil {
		fc.lastFlags = f.Header.Flags
	}
	return f, err
}

// request sends m and returns the response to it, skipping pushed events.
func (fc *frameClient) request(m message.Message) message.Message {
	fc.t.Helper()
	id := fc.send(m)
	for {
		f, err := fc.recv(3 * time.Second)
		require.NoError(fc.t, err, "no answer to %v", m)
		if ev, ok := f.Body.Message.(message.Event); ok && f.Header.StreamId == -1 {
			fc.pending = append(fc.pending, ev)
			continue
		}
		if f.Header.StreamId == id {
			if op := f.Body.Message.GetOpCode(); fc.version >= primitive.ProtocolVersion5 && !fc.beta &&
				(op == primitive.OpCodeReady || op == primitive.OpCodeAuthenticate) {
				fc.modern = true
			}
			return f.Body.Message
		}
	}
}

// handshake runs OPTIONS, STARTUP and REGISTER for the given event types.
func (fc *frameClient) handshake(events ...primitive.EventType) {
	fc.t.Helper()
	_, ok := fc.request(&message.Options{}).(*message.Supported)
	require.True(fc.t, ok)
	resp := fc.request(&message.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	require.IsType(fc.t, &message.Ready{}, resp)
	if len(events) > 0 {
		require.IsType(fc.t, &message.Ready{}, fc.request(&message.Register{EventTypes: events}))
	}
}

func (fc *frameClient) query(cql string, values ...*primitive.Value) message.Message {
	fc.t.Helper()
	return fc.request(&message.Query{Query: cql, Options: &message.QueryOptions{
		Consistency: primitive.ConsistencyLevelOne, PositionalValues: values}})
}

// rows runs a query that must return rows.
func (fc *frameClient) rows(cql string, values ...*primitive.Value) *message.RowsResult {
	fc.t.Helper()
	resp := fc.query(cql, values...)
	rows, ok := resp.(*message.RowsResult)
	require.True(fc.t, ok, "%s: got %v", cql, resp)
	return rows
}

// events reads pushed events for d.
func (fc *frameClient) events(d time.Duration) []message.Event {
	out := fc.pending
	fc.pending = nil
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return out
		}
		f, err := fc.recv(left)
		if err != nil {
			return out
		}
		if ev, ok := f.Body.Message.(message.Event); ok && f.Header.StreamId == -1 {
			out = append(out, ev)
		}
	}
}

// awaitEvent reads until an event matching want arrives, failing after d.
func (fc *frameClient) awaitEvent(d time.Duration, want func(message.Event) bool) message.Event {
	fc.t.Helper()
	for i, ev := range fc.pending {
		if want(ev) {
			fc.pending = append(fc.pending[:i], fc.pending[i+1:]...)
			return ev
		}
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		f, err := fc.recv(time.Until(deadline))
		if err != nil {
			break
		}
		if ev, ok := f.Body.Message.(message.Event); ok && want(ev) {
			return ev
		}
	}
	fc.t.Fatalf("no matching event within %v", d)
	return nil
}

func eventString(ev message.Event) string {
	switch e := ev.(type) {
	case *message.StatusChangeEvent:
		return fmt.Sprintf("%s %s", e.ChangeType, e.Address.Addr)
	case *message.TopologyChangeEvent:
		return fmt.Sprintf("%s %s", e.ChangeType, e.Address.Addr)
	case *message.SchemaChangeEvent:
		return fmt.Sprintf("SCHEMA %s %s %s.%s", e.ChangeType, e.Target, e.Keyspace, e.Object)
	}
	return fmt.Sprint(ev)
}

// column returns the named column's cells of a rows result.
func cells(t *testing.T, r *message.RowsResult, name string) [][]byte {
	t.Helper()
	for i, c := range r.Metadata.Columns {
		if c.Name == name {
			var out [][]byte
			for _, row := range r.Data {
				out = append(out, row[i])
			}
			return out
		}
	}
	t.Fatalf("no column %q in %v", name, r.Metadata.Columns)
	return nil
}

func columnNames(r *message.RowsResult) []string {
	var out []string
	for _, c := range r.Metadata.Columns {
		out = append(out, c.Name)
	}
	return out
}

// fastConfig is a cluster config with short gossip delays for tests.
func fastConfig(nodes int) Config {
	return Config{
		Nodes:             nodes,
		GossipDelay:       100 * time.Millisecond,
		StopAnnounceDelay: 100 * time.Millisecond,
		KillDetectDelay:   400 * time.Millisecond,
	}
}

func startCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
