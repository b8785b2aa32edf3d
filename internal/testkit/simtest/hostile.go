package simtest

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/require"
)

// HostileServer is a scripted CQL server on 127.0.0.1: it completes the handshake like a
// well-behaved node (SUPPORTED, READY, READY), then answers every other request with
// misbehave, which writes whatever raw bytes it likes.
type HostileServer struct {
	t         testing.TB
	ln        net.Listener
	misbehave func(nc net.Conn, req *frame.Frame)
	// Handshake, when set (before the first dial), replaces the well-behaved answer to OPTIONS.
	Handshake func(nc net.Conn, req *frame.Frame)

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewHostileServer starts a HostileServer that answers with misbehave; the test closes it.
func NewHostileServer(t testing.TB, misbehave func(nc net.Conn, req *frame.Frame)) *HostileServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &HostileServer{t: t, ln: ln, misbehave: misbehave}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// Addr is the server's address, "127.0.0.1:port".
func (s *HostileServer) Addr() string { return s.ln.Addr().String() }

func (s *HostileServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, nc)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(nc)
	}
}

func (s *HostileServer) serve(nc net.Conn) {
	defer s.wg.Done()
	codec := frame.NewCodec()
	for {
		req, err := codec.DecodeFrame(nc)
		if err != nil {
			return
		}
		switch req.Body.Message.(type) {
		case *message.Options:
			if s.Handshake != nil {
				s.Handshake(nc, req)
				continue
			}
			s.Reply(nc, req, &message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.5"}}})
		case *message.Startup, *message.Register:
			s.Reply(nc, req, &message.Ready{})
		default:
			s.misbehave(nc, req)
		}
	}
}

// Reply writes m as the answer to req.
func (s *HostileServer) Reply(nc net.Conn, req *frame.Frame, m message.Message) {
	var buf bytes.Buffer
	f := frame.NewFrame(req.Header.Version, req.Header.StreamId, m)
	f.Header.IsResponse = true
	if err := frame.NewCodec().EncodeFrame(f, &buf); err == nil {
		_, _ = nc.Write(buf.Bytes())
	}
}

func (s *HostileServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, nc := range s.conns {
		_ = nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// RawHeader is a v4 response header for stream with opcode op announcing a body of length.
func RawHeader(stream int16, op primitive.OpCode, length uint32) []byte {
	h := make([]byte, 9)
	h[0] = 0x80 | byte(primitive.ProtocolVersion4)
	binary.BigEndian.PutUint16(h[2:], uint16(stream))
	h[4] = byte(op)
	binary.BigEndian.PutUint32(h[5:], length)
	return h
}
