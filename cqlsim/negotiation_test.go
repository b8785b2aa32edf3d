package cqlsim

// These tests pin what a node answers to the first frame of a connection in each protocol version,
// as Cassandra 3.11 and 4.x do (README "Protocol versions"). Before negotiation.go, 3.11 answered v5
// with 3.0's "the lowest supported version is 3 and the greatest is 4" in a v4 frame, echoed the
// client's stream id, and 4.x had no beta version: TestVersionAnswers failed on every row but the
// v1/v2 layout, and TestBetaV5On311WithUseBeta failed at the first request.

import (
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	versions311 = "3/v3, 4/v4, 5/v5-beta"
	versions4x  = "3/v3, 4/v4, 5/v5, 6/v6-beta"
)

// rawAnswer is an error frame read byte by byte: the library cannot decode every version a node may
// answer in (v1, v2, v6).
type rawAnswer struct {
	version byte
	flags   byte
	stream  int
	opcode  byte
	code    uint32
	msg     string
}

// sendRawOptions writes an OPTIONS frame of version v with the given header flags on stream 7 and
// reads the answer; client is the connection's local address.
func sendRawOptions(t *testing.T, addr string, v, flags byte) (a rawAnswer, client string) {
	t.Helper()
	fc := dialFrames(t, addr, primitive.ProtocolVersion4)
	req := []byte{v, flags, 0, 7, byte(primitive.OpCodeOptions), 0, 0, 0, 0}
	if v < 3 {
		req = []byte{v, flags, 7, byte(primitive.OpCodeOptions), 0, 0, 0, 0}
	}
	_, err := fc.conn.Write(req)
	require.NoError(t, err)
	_ = fc.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	first, err := fc.br.Peek(1)
	require.NoError(t, err)
	a.version = first[0] & 0x7f
	require.NotZero(t, first[0]&0x80, "a response")
	var bodyLen uint32
	if a.version < 3 {
		head := make([]byte, 8)
		_, err = io.ReadFull(fc.br, head)
		require.NoError(t, err)
		a.flags, a.stream, a.opcode = head[1], int(int8(head[2])), head[3]
		bodyLen = binary.BigEndian.Uint32(head[4:8])
	} else {
		head := make([]byte, 9)
		_, err = io.ReadFull(fc.br, head)
		require.NoError(t, err)
		a.flags, a.stream, a.opcode = head[1], int(int16(binary.BigEndian.Uint16(head[2:4]))), head[4]
		bodyLen = binary.BigEndian.Uint32(head[5:9])
	}
	body := make([]byte, bodyLen)
	_, err = io.ReadFull(fc.br, body)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(body), 6)
	a.code = binary.BigEndian.Uint32(body[:4])
	n := int(binary.BigEndian.Uint16(body[4:6]))
	require.Len(t, body, 6+n)
	a.msg = string(body[6:])
	_, err = fc.br.ReadByte()
	assert.Error(t, err, "the node closes the connection after the error")
	return a, fc.conn.LocalAddr().String()
}

func TestVersionAnswers(t *testing.T) {
	invalid := func(v int, supported string) string {
		return fmt.Sprintf("Invalid or unsupported protocol version (%d); supported versions are (%s)", v, supported)
	}
	beta := func(v int) string {
		return fmt.Sprintf("Beta version of the protocol used (%d/v%d-beta), but USE_BETA flag is unset", v, v)
	}
	cases := []struct {
		release      string
		v            byte
		flags        byte
		replyVersion byte
		msg          string
	}{
		// Cassandra 3.11: v3 and v4, v5 as a beta. Old versions are answered in their own layout,
		// newer ones in v5 (ProtocolVersion.MAX_SUPPORTED_VERSION), the beta refusal in the beta version.
		{"3.11.17", 1, 0, 1, invalid(1, versions311)},
		{"3.11.17", 2, 0, 2, invalid(2, versions311)},
		{"3.11.17", 5, 0, 5, beta(5)},
		{"3.11.17", 6, 0, 5, invalid(6, versions311)},
		{"3.11.17", 66, 0, 5, invalid(66, versions311)},
		// Cassandra 4.x: v3 to v5, v6 as a beta. Newer versions are answered in the connection's
		// version, which before STARTUP is ProtocolVersion.CURRENT, v5.
		{"4.1.5", 2, 0, 2, invalid(2, versions4x)},
		{"4.1.5", 6, 0, 6, beta(6)},
		{"4.1.5", 7, 0, 5, invalid(7, versions4x)},
		{"4.1.5", 65, 0, 5, invalid(65, versions4x)},
		{"4.0.11", 6, 0, 6, beta(6)},
		{"5.0.2", 7, 0, 5, invalid(7, versions4x)},
	}
	clusters := map[string]*Cluster{}
	for i, tc := range cases {
		c := clusters[tc.release]
		if c == nil {
			cfg := fastConfig(1)
			cfg.ReleaseVersion = tc.release
			cfg.BaseIP = fmt.Sprintf("127.0.0.%d", 31+len(clusters))
			c = startCluster(t, cfg)
			clusters[tc.release] = c
		}
		t.Run(fmt.Sprintf("%d_%s_v%d", i, tc.release, tc.v), func(t *testing.T) {
			a, client := sendRawOptions(t, c.Node(0).Addr(), tc.v, tc.flags)
			assert.Equal(t, tc.replyVersion, a.version, "frame version")
			assert.Equal(t, 0, a.stream, "Cassandra rejects the header before it reads the stream id")
			assert.Equal(t, byte(primitive.OpCodeError), a.opcode)
			assert.Equal(t, uint32(primitive.ErrorCodeProtocolError), a.code)
			assert.Equal(t, tc.msg, a.msg)
			assert.Zero(t, a.flags&byte(primitive.HeaderFlagUseBeta), "no USE_BETA on a refusal")
			closed := awaitEvent(t, c, time.Second, func(e Event) bool {
				return e.Kind == EventClosed && e.Client == client
			})
			assert.Equal(t, CloseProtocol, closed.Detail)
		})
	}
}

// A 3.11 node speaks its v5 beta to a client that sets USE_BETA: legacy frames throughout (segments
// came with 4.0's final v5), USE_BETA on every response.
func TestBetaV5On311WithUseBeta(t *testing.T) {
	cfg := fastConfig(1)
	cfg.BaseIP = "127.0.0.35"
	c := startCluster(t, cfg)
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion5)
	fc.beta = true
	fc.handshake(primitive.EventTypeStatusChange)
	assert.False(t, fc.modern, "no segments on 3.11's v5 beta")
	assert.True(t, fc.lastFlags.Contains(primitive.HeaderFlagUseBeta), "responses carry USE_BETA")
	rows := fc.rows("SELECT release_version FROM system.local")
	assert.Equal(t, "3.11.17", string(rows.Data[0][0]))

	// Without the flag the same version is refused, as TestVersionAnswers shows on a raw socket; on
	// 4.x v5 needs no flag.
	cfg = fastConfig(1)
	cfg.BaseIP = "127.0.0.36"
	cfg.ReleaseVersion = "4.1.5"
	c4 := startCluster(t, cfg)
	fc = dialFrames(t, c4.Node(0).Addr(), primitive.ProtocolVersion5)
	fc.handshake()
	assert.True(t, fc.modern)
	assert.False(t, fc.lastFlags.Contains(primitive.HeaderFlagUseBeta))
	_, ok := fc.request(&message.Options{}).(*message.Supported)
	assert.True(t, ok)
}

// Config.MaxProtocolVersion caps negotiation as Cassandra's max negotiable protocol version
// does: a greater version (the beta included) is refused as unsupported, in a frame of the
// capped version; the capped version itself is served.
func TestMaxProtocolVersionCapsNegotiation(t *testing.T) {
	cases := []struct {
		release      string
		limit        int
		v            byte
		replyVersion byte
		msg          string
	}{
		{"3.11.17", 3, 4, 3, fmt.Sprintf("Invalid or unsupported protocol version (4); supported versions are (%s)", versions311)},
		{"3.11.17", 3, 5, 3, fmt.Sprintf("Invalid or unsupported protocol version (5); supported versions are (%s)", versions311)},
		{"4.1.5", 4, 5, 4, fmt.Sprintf("Invalid or unsupported protocol version (5); supported versions are (%s)", versions4x)},
	}
	for i, tc := range cases {
		cfg := fastConfig(1)
		cfg.ReleaseVersion, cfg.MaxProtocolVersion = tc.release, tc.limit
		cfg.BaseIP = fmt.Sprintf("127.0.0.%d", 41+i)
		c := startCluster(t, cfg)
		a, _ := sendRawOptions(t, c.Node(0).Addr(), tc.v, 0)
		assert.Equal(t, tc.replyVersion, a.version, "frame version")
		assert.Equal(t, 0, a.stream)
		assert.Equal(t, uint32(primitive.ErrorCodeProtocolError), a.code)
		assert.Equal(t, tc.msg, a.msg)

		fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion(tc.limit))
		assert.IsType(t, &message.Supported{}, fc.request(&message.Options{}), "v%d is served", tc.limit)
	}

	for _, limit := range []int{2, 5} {
		_, err := StartInMemory(Config{MaxProtocolVersion: limit})
		assert.ErrorContains(t, err, fmt.Sprintf("MaxProtocolVersion %d: release 3.11.17 speaks v3 to v4", limit))
	}
}
