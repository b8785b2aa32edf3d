package cqlconn

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// column is one column of a rows result.
type column struct {
	name string
	typ  datatype.DataType
}

// rowsResult encodes rows (one Go value a column, of a type datacodec takes for it) as a ROWS
// result of the columns cols.
func rowsResult(t testing.TB, cols []column, rows [][]any) *message.RowsResult {
	t.Helper()
	md := &message.RowsMetadata{ColumnCount: int32(len(cols))}
	for i, col := range cols {
		md.Columns = append(md.Columns, &message.ColumnMetadata{Keyspace: "system", Table: "peers", Name: col.name, Index: int32(i), Type: col.typ})
	}
	res := &message.RowsResult{Metadata: md}
	for _, r := range rows {
		var row message.Row
		for i, v := range r {
			row = append(row, simtest.EncodeCell(t, cols[i].typ, v))
		}
		res.Data = append(res.Data, row)
	}
	return res
}

// allocatedDuring returns the bytes the whole process allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// dialMeasured dials addr with connectTimeout and returns how long the dial took, the bytes
// the process allocated meanwhile, and the error.
func dialMeasured(addr string, connectTimeout time.Duration) (took time.Duration, alloc uint64, err error) {
	alloc = allocatedDuring(func() {
		start := time.Now()
		_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{ConnectTimeout: connectTimeout})
		took = time.Since(start)
	})
	return took, alloc, err
}

// Issue 10, item 1. Fails without the frame-size check: the reader allocated the announced
// 2 GiB body up front (TotalAlloc grew by 2 GiB) before reading a byte of it.
func TestDialRejectsFrameHeaderAnnouncing2GiB(t *testing.T) {
	s := simtest.NewHostileServer(t, nil)
	s.Handshake = func(nc net.Conn, req *frame.Frame) {
		_, _ = nc.Write(simtest.RawHeader(req.Header.StreamId, primitive.OpCodeSupported, 1<<31-1))
	}
	took, alloc, err := dialMeasured(s.Addr(), 500*time.Millisecond)
	t.Logf("a 2 GiB frame header: dial failed after %v, %d KiB allocated", took, alloc>>10)
	require.Error(t, err)
	assert.Equal(t, ClassProtocol, Classify(err), "%v", err)
	assert.Contains(t, err.Error(), "frame too large")
	assert.LessOrEqual(t, alloc, uint64(64<<20), "heap allocated for a 2 GiB header")
	assert.Less(t, took, 500*time.Millisecond, "rejected at the header, not at the deadline")
}

// A header under the limit whose body never comes: the dial keeps its deadline and the
// buffer holds only what arrived. Fails without the fix: 30 MiB allocated up front.
func TestDialKeepsDeadlineWhenBodyNeverArrives(t *testing.T) {
	s := simtest.NewHostileServer(t, nil)
	s.Handshake = func(nc net.Conn, req *frame.Frame) {
		_, _ = nc.Write(simtest.RawHeader(req.Header.StreamId, primitive.OpCodeSupported, 30<<20))
		_, _ = nc.Write(make([]byte, 1000)) // a little, then silence
	}
	took, alloc, err := dialMeasured(s.Addr(), 500*time.Millisecond)
	require.Error(t, err)
	assert.Equal(t, ClassRetryable, Classify(err), "%v", err)
	assert.GreaterOrEqual(t, took, 500*time.Millisecond)
	assert.Less(t, took, 1500*time.Millisecond, "the dial kept its 500 ms deadline")
	assert.LessOrEqual(t, alloc, uint64(16<<20), "heap allocated for 1,000 bytes of a 30 MiB body")
}

// An established connection receiving a huge header, and one stalled in a body: Close is
// prompt and leaves no goroutine (goleak in TestMain).
func TestCloseIsPromptWhileReaderIsInAHostileFrame(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length uint32
	}{{"2GiB header", 1<<31 - 1}, {"stalled 30MiB body", 30 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.NewHostileServer(t, func(nc net.Conn, req *frame.Frame) {
				_, _ = nc.Write(simtest.RawHeader(req.Header.StreamId, primitive.OpCodeResult, tc.length))
				_, _ = nc.Write(make([]byte, 100))
			})
			c, err := Dial(context.Background(), Endpoint{Addr: s.Addr()}, ConnConfig{HeartbeatInterval: -1})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, _ = c.Do(ctx, &message.Query{Query: "SELECT * FROM system.local", Options: &message.QueryOptions{}})
			start := time.Now()
			require.NoError(t, c.Close())
			assert.Less(t, time.Since(start), 100*time.Millisecond, "Close")
			select {
			case <-c.Done():
			default:
				t.Fatal("Done not closed after Close")
			}
		})
	}
}

func TestMaxFrameSizeIsConfigurable(t *testing.T) {
	s := simtest.NewHostileServer(t, nil)
	s.Handshake = func(nc net.Conn, req *frame.Frame) {
		s.Reply(nc, req, &message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.5"}, "PAD": {string(make([]byte, 2000))}}})
	}
	_, err := Dial(context.Background(), Endpoint{Addr: s.Addr()}, ConnConfig{MaxFrameSize: 1024})
	require.Error(t, err)
	assert.Equal(t, ClassProtocol, Classify(err), "%v", err)

	c, err := Dial(context.Background(), Endpoint{Addr: s.Addr()}, ConnConfig{MaxFrameSize: 4096})
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// Issue 10, item 4. A server (or proxy) that answers each request again just before the next
// one is answered: the late duplicate must not become the next request's answer. Fails with
// last-in-first-out stream reuse: request "B" got "A"'s duplicate.
func TestLateDuplicateReplyIsDroppedAndCounted(t *testing.T) {
	var prev *frame.Frame
	var s *simtest.HostileServer
	s = simtest.NewHostileServer(t, func(nc net.Conn, req *frame.Frame) {
		q := req.Body.Message.(*message.Query).Query
		if prev != nil { // the duplicate of the previous answer arrives first
			s.Reply(nc, prev, &message.SetKeyspaceResult{Keyspace: prev.Body.Message.(*message.Query).Query})
		}
		s.Reply(nc, req, &message.SetKeyspaceResult{Keyspace: q})
		prev = req
	})
	var mu sync.Mutex
	var dropped []int16
	c, err := Dial(context.Background(), Endpoint{Addr: s.Addr()}, ConnConfig{
		HeartbeatInterval: -1,
		OnDroppedReply: func(_ Endpoint, stream int16) {
			mu.Lock()
			dropped = append(dropped, stream)
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	for _, q := range []string{"A", "B", "C"} {
		resp, err := c.Do(context.Background(), &message.Query{Query: q, Options: &message.QueryOptions{}})
		require.NoError(t, err)
		assert.Equal(t, q, resp.(*message.SetKeyspaceResult).Keyspace, "answer to request %q", q)
	}
	// The duplicate of "C" has not been sent; those of "A" and "B" were dropped. A further
	// request flushes the reader past "B"'s duplicate.
	_, err = c.Do(context.Background(), &message.Query{Query: "D", Options: &message.QueryOptions{}})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, dropped, 3, "duplicates of A, B and C dropped")
}

// Stream IDs go round all of 1..maxStreams before one is reused.
func TestStreamIDsRotate(t *testing.T) {
	c := &Conn{streams: map[int16]chan any{}, next: 1}
	seen := map[int16]bool{}
	for range maxStreams {
		id, _, err := c.reserve()
		require.NoError(t, err)
		assert.False(t, seen[id], "stream %d reused before the rotation came round", id)
		seen[id] = true
		c.release(id)
	}
	id, _, err := c.reserve()
	require.NoError(t, err)
	assert.Equal(t, int16(1), id, "the rotation starts again at 1")
}

// DefaultMaxFrameSize is sized for system tables: the system.peers result of a 1,000-node
// cluster with 256 vnodes a node (tokens of 19 or 20 digits, as Murmur3 tokens mostly are)
// must fit several times over.
func TestDefaultMaxFrameSizeFitsSystemPeersOf1000Nodes(t *testing.T) {
	cols := []column{
		{"peer", datatype.Inet}, {"data_center", datatype.Varchar}, {"host_id", datatype.Uuid},
		{"preferred_ip", datatype.Inet}, {"rack", datatype.Varchar}, {"release_version", datatype.Varchar},
		{"rpc_address", datatype.Inet}, {"schema_version", datatype.Uuid},
		{"tokens", datatype.NewSet(datatype.Varchar)},
	}
	var rows [][]any
	for n := range 1000 {
		ip := net.IPv4(10, 0, byte(n>>8), byte(n))
		tokens := make([]string, 256)
		for i := range tokens {
			tokens[i] = strconv.FormatInt(-9223372036854775807+int64(n*256+i)*72057594037927, 10)
		}
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		rows = append(rows, []any{ip, "datacenter1", id, ip, "rack1", "4.1.3", ip, id, tokens})
	}
	var buf bytes.Buffer
	f := frame.NewFrame(primitive.ProtocolVersion4, 1, rowsResult(t, cols, rows))
	require.NoError(t, frame.NewCodec().EncodeFrame(f, &buf))
	t.Logf("system.peers of 1,000 nodes x 256 vnodes: %.1f MiB; DefaultMaxFrameSize %d MiB", float64(buf.Len())/(1<<20), DefaultMaxFrameSize>>20)
	assert.Less(t, buf.Len()*4, DefaultMaxFrameSize, "at least 4 times")
}
