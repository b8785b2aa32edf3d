package real

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startupAnswer sends one STARTUP in protocol version v (with the beta flag when beta) and
// returns the answer's opcode and, for an ERROR, its code and message.
func startupAnswer(t *testing.T, addr string, v byte, beta bool) (opcode byte, code uint32, msg string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	body := []byte{0, 1}
	for _, s := range []string{"CQL_VERSION", "3.0.0"} {
		body = binary.BigEndian.AppendUint16(body, uint16(len(s)))
		body = append(body, s...)
	}
	var flags byte
	if beta {
		flags = 0x10 // USE_BETA
	}
	frame := []byte{v, flags, 0, 0, 0x01}
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(body)))
	_, err = conn.Write(append(frame, body...))
	require.NoError(t, err)
	hdr := make([]byte, 9)
	if v < 3 {
		hdr = hdr[:8]
	}
	_, err = io.ReadFull(conn, hdr)
	require.NoError(t, err, "v%d beta=%v: no answer", v, beta)
	opcode = hdr[len(hdr)-5]
	n := binary.BigEndian.Uint32(hdr[len(hdr)-4:])
	rest := make([]byte, min(n, 4096))
	_, err = io.ReadFull(conn, rest)
	require.NoError(t, err)
	if opcode == 0x00 && len(rest) >= 6 {
		code = binary.BigEndian.Uint32(rest)
		l := int(binary.BigEndian.Uint16(rest[4:]))
		msg = string(rest[6:min(6+l, len(rest))])
	}
	return opcode, code, msg
}

// sniffer is a Dialer that records, per connection, the protocol version of the STARTUP
// frames written and whether system.peers_v2 was queried, by caller (gocql or ours).
type sniffer struct {
	clientprobe.Dialer
	mu       sync.Mutex
	startups map[clientprobe.Caller][]byte
	peersV2  map[clientprobe.Caller]int
}

func (s *sniffer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	by := clientprobe.CallerOf()
	c, err := s.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, s: s, by: by}, nil
}

type sniffConn struct {
	net.Conn
	s  *sniffer
	by clientprobe.Caller
}

func (c *sniffConn) Write(p []byte) (int, error) {
	c.s.mu.Lock()
	if len(p) >= 9 && p[4] == 0x01 && p[0]&0x80 == 0 {
		c.s.startups[c.by] = append(c.s.startups[c.by], p[0]&0x7f)
	}
	if bytes.Contains(p, []byte("system.peers_v2")) {
		c.s.peersV2[c.by]++
	}
	c.s.mu.Unlock()
	return c.Conn.Write(p)
}

// What Cassandra 5.0 offers and what each client ends up speaking. Cassandra 5.0 speaks v3, v4
// and v5, and v6 only as a beta (the USE_BETA flag); ours offers v4 then v3, gocql v1.7.0
// negotiates from v4; both read system.peers_v2 (release 4.0 and later). gocql v2.1.2 is in
// the gocqlv2 module's real suite.
func TestProtocolNegotiation(t *testing.T) {
	c := cassandra(t)
	addr := c.Node(0).Addr()
	for _, v := range []byte{3, 4, 5} {
		op, code, msg := startupAnswer(t, addr, v, false)
		assert.Equal(t, byte(0x02), op, "v%d STARTUP answered READY (error 0x%x %q)", v, code, msg)
	}
	op, code, msg := startupAnswer(t, addr, 6, false)
	t.Logf("FIGURE cassandra %s: v6 without USE_BETA: opcode 0x%02x, error 0x%04x %q", c.Version(), op, code, msg)
	assert.Equal(t, byte(0x00), op, "v6 without the beta flag is refused")
	assert.Equal(t, uint32(0x000A), code, "as a protocol error")
	assert.Contains(t, msg, "USE_BETA")
	op, code, msg = startupAnswer(t, addr, 6, true)
	assert.Equal(t, byte(0x02), op, "v6 with the beta flag: READY (error 0x%x %q)", code, msg)
	op, code, msg = startupAnswer(t, addr, 7, false)
	t.Logf("FIGURE cassandra %s: v7: opcode 0x%02x, error 0x%04x %q", c.Version(), op, code, msg)
	assert.Equal(t, uint32(0x000A), code, "v7 is refused as a protocol error")

	sn := &sniffer{startups: map[clientprobe.Caller][]byte{}, peersV2: map[clientprobe.Caller]int{}}
	cluster := gocql.NewCluster(c.Hosts()...)
	cluster.Port = c.Port()
	cluster.Dialer = sn
	cluster.Logger = quietLogger{}
	cc, err := controlconn.New(cluster, controlconn.Cadence{})
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	defer session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	realtime.Eventually(t, 10*time.Second, func() bool { return cc.Snapshot() != nil && cc.Snapshot().Len() == 3 }, "ours sees 3 hosts")
	sn.mu.Lock()
	defer sn.mu.Unlock()
	t.Logf("FIGURE cassandra %s negotiation: ours speaks v%d (STARTUP versions %v), gocql v1.7.0 STARTUP versions: control %v, pools %v; system.peers_v2 queried by ours %d, by gocql %d",
		c.Version(), cc.Status().Version, sn.startups[clientprobe.Ours], sn.startups[clientprobe.GocqlControl], sn.startups[clientprobe.GocqlPool],
		sn.peersV2[clientprobe.Ours], sn.peersV2[clientprobe.GocqlControl]+sn.peersV2[clientprobe.GocqlPool])
	assert.EqualValues(t, 4, cc.Status().Version, "ours speaks v4 with Cassandra 5.0")
	for _, by := range []clientprobe.Caller{clientprobe.GocqlControl, clientprobe.GocqlPool} {
		if vs := sn.startups[by]; assert.NotEmpty(t, vs, "gocql's STARTUPs seen (%v)", by) {
			assert.EqualValues(t, 4, vs[len(vs)-1], "gocql v1.7.0 settles on v4 (%v)", by)
		}
	}
	assert.Positive(t, sn.peersV2[clientprobe.Ours], "ours reads system.peers_v2")
	var peers []string
	for h := range cc.Snapshot().All() {
		peers = append(peers, fmt.Sprintf("%s:%d", h.ConnectAddress(), h.Port()))
	}
	assert.ElementsMatch(t, []string{"127.0.0.1:9042", "127.0.0.2:9042", "127.0.0.3:9042"}, peers, "every host with its native port")
}
