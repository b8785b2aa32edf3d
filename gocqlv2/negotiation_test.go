package gocqlv2

// Sessions of gocql v2 (gocql v1's rows: cqlsim's TestGocqlV1SessionsNegotiate) against the simulator's 3.11 and 4.1 releases, with their default
// protocol settings and with each version pinned. Before cqlsim refused v5 on 3.11 as Cassandra
// does (the beta refusal on stream 0), gocql v2.1.2 with its defaults could not create a session
// on 3.11: "unable to discover protocol version: Invalid or unsupported protocol version (5); the
// lowest supported version is 3 and the greatest is 4" (the issue's report; the v2 rows of
// TestSessionsNegotiate failed so).

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
)

const (
	release311 = "3.11.17"
	release41  = "4.1.5"
	betaV5     = "Beta version of the protocol used (5/v5-beta), but USE_BETA flag is unset"
)

// v2Cluster is gocql v2's configuration for sim with its defaults, but short timeouts.
func v2Cluster(sim *cqlsim.Cluster) *gocql.ClusterConfig {
	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port()
	cluster.ConnectTimeout = 2 * time.Second
	cluster.Timeout = 2 * time.Second
	return cluster
}

// wireTap is a gocql Dialer that keeps the first bytes each server sent on each connection, to
// show what a session was answered.
type wireTap struct {
	mu    sync.Mutex
	conns []*tappedConn
}

type tappedConn struct {
	net.Conn
	tap *wireTap
	got []byte // guarded by tap.mu
}

func (w *wireTap) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &tappedConn{Conn: nc, tap: w}
	w.mu.Lock()
	w.conns = append(w.conns, c)
	w.mu.Unlock()
	return c, nil
}

func (c *tappedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.tap.mu.Lock()
	if len(c.got) < 512 {
		c.got = append(c.got, p[:min(n, 512-len(c.got))]...)
	}
	c.tap.mu.Unlock()
	return n, err
}

// answer is the first frame a server sent on a connection: version, stream, opcode, and for an
// ERROR its code and message.
type answer struct {
	version byte
	stream  int16
	opcode  byte
	code    uint32
	msg     string
}

// firstAnswers returns the first frame of every connection the tap saw (v3+ headers).
func (w *wireTap) firstAnswers() []answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []answer
	for _, c := range w.conns {
		b := c.got
		if len(b) < 9 {
			continue
		}
		a := answer{version: b[0] & 0x7f, stream: int16(binary.BigEndian.Uint16(b[2:4])), opcode: b[4]}
		if body := b[9:]; a.opcode == 0 && len(body) >= 6 {
			a.code = binary.BigEndian.Uint32(body[:4])
			n := int(binary.BigEndian.Uint16(body[4:6]))
			a.msg = string(body[6:min(len(body), 6+n)])
		}
		out = append(out, a)
	}
	return out
}

// releaseOf reads system.local's release_version through a session's query function.
func releaseOf(t *testing.T, scan func(dest ...any) error) string {
	t.Helper()
	var rv string
	require.NoError(t, scan(&rv))
	return rv
}

func TestSessionsNegotiate(t *testing.T) {
	for i, release := range []string{release311, release41} {
		sim := startCluster(t, cqlsim.Config{Nodes: 2, ReleaseVersion: release, BaseIP: fmt.Sprintf("127.0.%d.1", 40+i)})
		for _, proto := range []int{0, 3, 4, 5} {
			t.Run(fmt.Sprintf("v2_%s_proto%d", release, proto), func(t *testing.T) {
				cluster := v2Cluster(sim)
				cluster.ProtoVersion = proto
				tap := &wireTap{}
				cluster.Dialer = tap
				session, err := cluster.CreateSession()
				refusal := answer{version: 5, opcode: 0, code: 0x000A, msg: betaV5}
				if proto == 5 && release == release311 {
					// Cassandra 3.11 refuses v5 without USE_BETA (stream 0, in v5); gocql v2 pinned to
					// 5 has nowhere to go and reports the version unsupported.
					require.Error(t, err)
					assert.Contains(t, err.Error(), "unsupported protocol version 5 for host")
					answers := tap.firstAnswers()
					require.NotEmpty(t, answers)
					for _, a := range answers {
						assert.Equal(t, refusal, a)
					}
					return
				}
				require.NoError(t, err)
				defer bounded.Run(t, "gocql v2 Session.Close", bounded.CloseWithin, session.Close)
				assert.Equal(t, release, releaseOf(t, session.Query("SELECT release_version FROM system.local").Scan))
				if proto == 0 && release == release311 {
					// v2 starts at v5: the first connection gets the beta refusal, the next speak v4.
					answers := tap.firstAnswers()
					require.GreaterOrEqual(t, len(answers), 2)
					assert.Equal(t, refusal, answers[0])
					assert.Equal(t, byte(4), answers[len(answers)-1].version)
				}
				if proto == 0 && release == release41 {
					assert.Equal(t, byte(5), tap.firstAnswers()[0].version, "v5 accepted at once")
				}
			})
		}
	}
}
