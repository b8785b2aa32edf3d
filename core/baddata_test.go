package core

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
	"github.com/cqlcontrol/cqlcontrol/metadata"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

type skipRecorder struct {
	mu      sync.Mutex
	skipped [][]metadata.SkippedPeer
	dropped int
}

// observer is the Observer calling the methods that record.
func (r *skipRecorder) observer() Observer {
	return Observer{PeersSkipped: r.PeersSkipped, ReplyDropped: r.ReplyDropped}
}

func (r *skipRecorder) PeersSkipped(s []metadata.SkippedPeer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped = append(r.skipped, s)
}

func (r *skipRecorder) ReplyDropped(Endpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped++
}

// badPeerDialer dials through c; on connections to addr, every system.peers result gets one
// more row: a copy of bad's row with another host ID and the token "xyz", as a node whose
// system.peers holds a corrupt entry serves it.
type badPeerDialer struct {
	t    *testing.T
	c    *cqlsim.Cluster
	addr string
	bad  *cqlsim.Node
}

func (d *badPeerDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.c.DialContext(ctx, network, addr)
	if err != nil || addr != d.addr {
		return nc, err
	}
	return &badPeerConn{Conn: nc, d: d, codec: frame.NewCodec()}, nil
}

// badPeerConn decodes what the node sends and hands it on re-encoded, system.peers results
// with the bad row added. Only its reader goroutine reads it.
type badPeerConn struct {
	net.Conn
	d     *badPeerDialer
	codec frame.Codec
	buf   bytes.Buffer
}

func (c *badPeerConn) Read(b []byte) (int, error) {
	for c.buf.Len() == 0 {
		f, err := c.codec.DecodeFrame(c.Conn)
		if err != nil {
			return 0, err
		}
		if rows, ok := f.Body.Message.(*message.RowsResult); ok && len(rows.Metadata.Columns) > 0 &&
			rows.Metadata.Columns[0].Keyspace == "system" && rows.Metadata.Columns[0].Table == "peers" {
			c.d.addBadRow(rows)
		}
		if err := c.codec.EncodeFrame(f, &c.buf); err != nil {
			return 0, err
		}
	}
	return c.buf.Read(b)
}

func (d *badPeerDialer) addBadRow(rows *message.RowsResult) {
	col := map[string]int{}
	for i, c := range rows.Metadata.Columns {
		col[c.Name] = i
	}
	for _, r := range rows.Data {
		if bytes.Equal(r[col["peer"]], d.bad.IP()) {
			bad := append(message.Row(nil), r...)
			bad[col["peer"]] = simtest.EncodeCell(d.t, datatype.Inet, d.bad.IP().To16())
			bad[col["host_id"]] = simtest.EncodeCell(d.t, datatype.Uuid, "00000000-0000-4000-8000-000000000099")
			bad[col["tokens"]] = simtest.EncodeCell(d.t, datatype.NewSet(datatype.Varchar), []string{"xyz"})
			rows.Data = append(rows.Data, bad)
			return
		}
	}
}

// Issue 10, item 2, end to end. system.peers has a row with the token "xyz" beside two good
// ones: the control connection comes up with the other two hosts (before the fix Start never
// succeeded: the whole refresh was rejected) and reports the row in Status and to the observer.
func TestBadPeerRowIsSkippedAndReported(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		// Served by the first node (the only contact point): the other two, and a bad row.
		d := &badPeerDialer{t: t, c: c, addr: c.Node(0).Addr(), bad: c.Node(2)}
		obs := &skipRecorder{}
		cfg := config{ContactPoints: c.ContactPoints()[:1], Conn: cqlconn.ConnConfig{Dialer: d}}
		cc, err := newWithConfig(cfg, withRand(half), WithObserver(obs.observer()))
		require.NoError(t, err)
		defer func() { _ = cc.Close() }()
		startCC(t, cc)

		assert.Equal(t, 3, cc.Snapshot().Len(), "local and the two good peers")
		st := cc.Status()
		require.Len(t, st.SkippedPeers, 1)
		assert.Equal(t, 2, st.SkippedPeers[0].Row)
		assert.ErrorIs(t, st.SkippedPeers[0].Err, metadata.ErrInvalidPeer)
		assert.ErrorContains(t, st.SkippedPeers[0].Err, `"xyz"`)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.Len(t, obs.skipped, 1, "one refresh, one report")
		assert.Len(t, obs.skipped[0], 1)
	})
}
