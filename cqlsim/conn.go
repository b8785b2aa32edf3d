package cqlsim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/compression/snappy"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/datastax/go-cassandra-native-protocol/segment"
)

// errRejected ends the reader after a protocol error that closes the connection.
var errRejected = errors.New("cqlsim: request rejected, closing")

const (
	outQueueLen  = 256
	maxFrameBody = 256 << 20 // the native protocol's default max frame size
)

// outFrame is one frame for the writer goroutine.
type outFrame struct {
	f            *frame.Frame
	compress     bool          // compress the body (v3/v4 snappy)
	switchModern bool          // v5: later frames go in segments (after READY or AUTHENTICATE)
	closeAfter   bool          // close the connection (FIN) once written
	written      chan struct{} // closed once written (nil: nobody waits)
}

// serverConn is one client connection to a node. Its reader goroutine reads requests, answers them in
// order and owns the session state; its writer goroutine owns the socket's write side; gossip pushes events
// through the same queue without blocking.
type serverConn struct {
	node   *Node
	nc     net.Conn // a *net.TCPConn, or one end of a pipe in memory
	remote string
	out    chan outFrame // reader and pushers -> writer
	done   chan struct{} // closed by shutdown

	mu          sync.Mutex
	version     primitive.ProtocolVersion    // set by the reader at the first frame; guarded by mu
	events      map[primitive.EventType]bool // REGISTERed event types; guarded by mu
	closeReason string                       // first shutdown reason; guarded by mu
	closed      bool                         // guarded by mu
	compressing atomic.Bool                  // snappy negotiated and READY sent
	writerDone  chan struct{}                // closed when the writer goroutine returns
	flapTimer   *time.Timer                  // set at accept; stopped when the reader ends

	// Owned by the reader goroutine.
	br          *bufio.Reader
	codec       frame.RawCodec
	segments    segment.Codec
	modernIn    bool
	beta        bool   // 3.11's v5 beta, with USE_BETA: legacy frames, USE_BETA on responses; set before any response
	pending     []byte // partial frame spread over v5 segments
	started     bool   // STARTUP answered (READY or AUTH_SUCCESS)
	authPending bool   // AUTHENTICATE sent, waiting for AUTH_RESPONSE
	keyspace    string // USE

	// Owned by the writer goroutine.
	wcodec    frame.RawCodec
	modernOut bool
}

func newServerConn(n *Node, nc net.Conn) *serverConn {
	return &serverConn{
		node:       n,
		nc:         nc,
		remote:     nc.RemoteAddr().String(),
		out:        make(chan outFrame, outQueueLen),
		done:       make(chan struct{}),
		events:     map[primitive.EventType]bool{},
		writerDone: make(chan struct{}),
		br:         bufio.NewReaderSize(nc, 64<<10),
		codec:      frame.NewRawCodecWithCompression(snappy.Compressor{}),
		segments:   segment.NewCodec(),
		wcodec:     frame.NewRawCodecWithCompression(snappy.Compressor{}),
	}
}

// shutdown closes the connection once; rst resets it (SO_LINGER 0) instead of a FIN.
func (c *serverConn) shutdown(reason string, rst bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.closeReason = reason
	c.mu.Unlock()
	close(c.done)
	if tcp, ok := c.nc.(*net.TCPConn); ok && rst {
		_ = tcp.SetLinger(0) // a pipe has no RST: its peer reads EOF
	}
	_ = c.nc.Close()
}

func (c *serverConn) reason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeReason
}

// serve runs the connection until it closes; it is the reader goroutine.
func (c *serverConn) serve() {
	go c.writeLoop()
	err := c.readLoop()
	switch {
	case errors.Is(err, errRejected):
		// The writer sends the error and closes, unless the connection is already closed.
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.shutdown(CloseIdle, false)
	default:
		c.shutdown(CloseClient, false)
	}
	<-c.writerDone
	if c.flapTimer != nil {
		c.flapTimer.Stop()
	}
	c.node.connClosed(c, c.reason())
}

func (c *serverConn) readLoop() error {
	for {
		if err := c.awaitData(); err != nil {
			return err
		}
		var frames []*frame.RawFrame
		var err error
		if c.modernIn {
			frames, err = c.readSegment()
		} else {
			var f *frame.RawFrame
			f, err = c.readLegacyFrame()
			if f != nil {
				frames = append(frames, f)
			}
		}
		if err != nil {
			return err
		}
		for _, raw := range frames {
			if !c.waitGate() {
				return nil
			}
			if !c.serveFrame(raw) {
				return nil
			}
		}
	}
}

// awaitData blocks until the next request starts, applying the node's idle timeout. A blackholed node
// never times out a connection: a host whose packets are dropped sends no FIN.
func (c *serverConn) awaitData() error {
	for {
		idle := c.node.idleTimeout()
		if idle > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		}
		_, err := c.br.Peek(1)
		if idle > 0 {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && c.node.blackholed() {
			continue
		}
		return err
	}
}

// readLegacyFrame reads one v3-v5 frame outside segments. The first frame fixes the connection's version;
// a version the release refuses is answered with the protocol error real Cassandra sends (negotiation.go),
// then the connection closes.
func (c *serverConn) readLegacyFrame() (*frame.RawFrame, error) {
	head, err := c.br.Peek(2) // version, flags
	if err != nil {
		return nil, err
	}
	v := int(head[0] & 0x7f)
	useBeta := primitive.HeaderFlag(head[1]).Contains(primitive.HeaderFlagUseBeta)
	established := c.connVersion()
	if established == 0 {
		ref, ok := c.node.c.negotiate(v, useBeta)
		if !ok {
			c.rejectVersion(v, ref)
			return nil, errRejected
		}
		c.beta = v == c.node.c.rel.betaProtocol()
	}
	raw, err := c.codec.DecodeRawFrame(c.br)
	if err != nil {
		var verr *frame.ProtocolVersionErr
		if errors.As(err, &verr) || !isIOError(err) {
			c.rejectFrame(err.Error())
			return nil, errRejected
		}
		return nil, err
	}
	if established != 0 && raw.Header.Version != established {
		c.rejectFrame(fmt.Sprintf("Invalid message version. Got %d but previous messages on this connection had version %d", v, established))
		return nil, errRejected
	}
	if established == 0 {
		c.setVersion(raw.Header.Version)
	}
	return raw, nil
}

// readSegment reads one v5 segment and returns the frames it completes.
func (c *serverConn) readSegment() ([]*frame.RawFrame, error) {
	seg, err := c.segments.DecodeSegment(c.br)
	if err != nil {
		if !isIOError(err) {
			c.rejectFrame(err.Error())
			return nil, errRejected
		}
		return nil, err
	}
	data := seg.Payload.UncompressedData
	if !seg.Header.IsSelfContained {
		c.pending = append(c.pending, data...)
		if len(c.pending) < 9 {
			return nil, nil
		}
		need := 9 + int(binary.BigEndian.Uint32(c.pending[5:9]))
		if len(c.pending) < need {
			return nil, nil
		}
		data, c.pending = c.pending, nil
	}
	var frames []*frame.RawFrame
	r := bytes.NewReader(data)
	for r.Len() > 0 {
		raw, err := c.codec.DecodeRawFrame(r)
		if err != nil {
			c.rejectFrame(err.Error())
			return nil, errRejected
		}
		frames = append(frames, raw)
	}
	return frames, nil
}

func isIOError(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, new(*net.OpError))
}

// rejectVersion answers a frame of a refused protocol version on stream 0 and closes the connection.
// An error in v1 or v2 has their 8-byte header.
func (c *serverConn) rejectVersion(v int, ref refusal) {
	headLen := 9
	if v < 3 {
		headLen = 8 // v1/v2 headers have a one-byte stream id
	}
	head, _ := c.br.Peek(headLen)
	var bodyLen uint32
	if len(head) == headLen {
		bodyLen = binary.BigEndian.Uint32(head[headLen-4:])
		_, _ = c.br.Discard(headLen)
	}
	if bodyLen <= maxFrameBody {
		_, _ = c.br.Discard(int(bodyLen)) // read it all so closing sends a FIN, not a RST
	}
	body := binary.BigEndian.AppendUint32(nil, uint32(primitive.ErrorCodeProtocolError))
	body = binary.BigEndian.AppendUint16(body, uint16(len(ref.message)))
	body = append(body, ref.message...)
	out := []byte{byte(ref.version) | 0x80, 0, 0} // response, no flags, stream 0
	if ref.version >= 3 {
		out = append(out, 0) // two-byte stream id
	}
	out = append(out, byte(primitive.OpCodeError))
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	c.node.c.cfg.Logf("cqlsim: node %d: %s: %s", c.node.index, c.remote, ref.message)
	_, _ = c.nc.Write(out)
	c.shutdown(CloseProtocol, false)
}

// rejectFrame answers an unreadable frame with a protocol error on stream 0 and closes the connection.
func (c *serverConn) rejectFrame(msg string) {
	v := c.connVersion()
	if v == 0 {
		v = primitive.ProtocolVersion(c.node.c.rel.maxProtocol())
	}
	c.enqueue(outFrame{f: frame.NewFrame(v, 0, &message.ProtocolError{ErrorMessage: msg}), closeAfter: true})
}

func (c *serverConn) connVersion() primitive.ProtocolVersion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

func (c *serverConn) setVersion(v primitive.ProtocolVersion) {
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
}

// waitGate blocks while the node is blackholed; false if the connection closed meanwhile.
func (c *serverConn) waitGate() bool {
	select {
	case <-c.node.gate():
		return true
	case <-c.done:
		return false
	}
}

// enqueue hands a frame to the writer, waiting for room; false if the connection closed.
func (c *serverConn) enqueue(o outFrame) bool {
	select {
	case c.out <- o:
		return true
	case <-c.done:
		return false
	}
}

// push sends a server-initiated EVENT if the client registered for its type. It never blocks: a client
// that does not read loses events, as it would with a real node's bounded queue.
func (c *serverConn) push(typ primitive.EventType, ev message.Event) {
	c.mu.Lock()
	v, registered := c.version, c.events[typ]
	c.mu.Unlock()
	if !registered {
		return
	}
	f := frame.NewFrame(v, -1, ev)
	select {
	case c.out <- outFrame{f: f, compress: c.compressing.Load()}:
	default:
		c.node.c.cfg.Logf("cqlsim: node %d: %s: event queue full, dropped %v", c.node.index, c.remote, ev)
	}
}

// pushTracked is push for an event the caller waits to see written: the returned channel is
// closed once it is (nil: not registered, or the queue is full); if the connection ends first,
// c.done is closed instead.
func (c *serverConn) pushTracked(typ primitive.EventType, ev message.Event) chan struct{} {
	c.mu.Lock()
	v, registered := c.version, c.events[typ]
	c.mu.Unlock()
	if !registered {
		return nil
	}
	written := make(chan struct{})
	select {
	case c.out <- outFrame{f: frame.NewFrame(v, -1, ev), compress: c.compressing.Load(), written: written}:
		return written
	default:
		return nil
	}
}

func (c *serverConn) writeLoop() {
	defer close(c.writerDone)
	var buf bytes.Buffer
	for {
		select {
		case o := <-c.out:
			select {
			case <-c.node.gate():
			case <-c.done:
				return
			}
			buf.Reset()
			if err := c.encode(&buf, o); err != nil {
				c.node.c.cfg.Logf("cqlsim: node %d: %s: encode %v: %v", c.node.index, c.remote, o.f, err)
				c.shutdown(CloseProtocol, false)
				return
			}
			if _, err := c.nc.Write(buf.Bytes()); err != nil {
				c.shutdown(CloseClient, false)
				return
			}
			if o.written != nil {
				close(o.written)
			}
			if o.switchModern {
				c.modernOut = true
			}
			if o.closeAfter {
				c.shutdown(CloseProtocol, false)
				return
			}
		case <-c.done:
			return
		}
	}
}

// encode writes o as a frame, or as v5 segments once the connection switched to them.
func (c *serverConn) encode(w *bytes.Buffer, o outFrame) error {
	if o.compress && !c.modernOut {
		o.f.Header.Flags = o.f.Header.Flags.Add(primitive.HeaderFlagCompressed)
	}
	if c.beta {
		o.f.Header.Flags = o.f.Header.Flags.Add(primitive.HeaderFlagUseBeta)
	}
	if !c.modernOut {
		return c.wcodec.EncodeFrame(o.f, w)
	}
	var encoded bytes.Buffer
	if err := c.wcodec.EncodeFrame(o.f, &encoded); err != nil {
		return err
	}
	data := encoded.Bytes()
	selfContained := len(data) <= segment.MaxPayloadLength
	for len(data) > 0 {
		n := min(len(data), segment.MaxPayloadLength)
		seg := &segment.Segment{
			Header:  &segment.Header{IsSelfContained: selfContained},
			Payload: &segment.Payload{UncompressedData: data[:n]},
		}
		if err := c.segments.EncodeSegment(seg, w); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
