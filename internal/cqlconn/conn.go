package cqlconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/wire"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// Conn is one native-protocol connection to one node, handshake done and events registered.
// Requests are multiplexed over stream IDs; one reader goroutine dispatches responses and
// pushes server events to Events; one heartbeat goroutine detects a silent peer.
type Conn struct {
	nc       net.Conn
	ep       Endpoint
	version  primitive.ProtocolVersion
	codec    frame.RawCodec
	cfg      ConnConfig
	log      *slog.Logger
	events   chan message.Event // written by the reader goroutine only
	overflow chan struct{}      // cap 1; signalled when an event had to be dropped
	done     chan struct{}      // closed once by shutdown
	check    chan struct{}      // cap 1; CheckNow's request for a heartbeat at once
	wg       sync.WaitGroup     // reader + heartbeat goroutines

	// writeSem (cap 1) serialises frame writes of request goroutines and the heartbeat. It is a
	// channel so that a writer waits for it only as long as its context allows: a write stuck
	// on a peer that stopped reading cannot hold the heartbeat past its timeout.
	writeSem chan struct{}

	mu      sync.Mutex         // guards the fields below
	streams map[int16]chan any // in-flight stream ID -> cap-1 reply channel (*frame.Frame or error)
	next    int16              // where the search for a free stream ID starts (rotation)
	err     error              // why the connection ended; set once, before done is closed
}

func newConn(nc net.Conn, ep Endpoint, cfg ConnConfig, v primitive.ProtocolVersion) *Conn {
	c := &Conn{
		nc:       nc,
		ep:       ep,
		version:  v,
		codec:    frame.NewRawCodec(),
		cfg:      cfg,
		log:      cfg.Logger.With("addr", ep.Addr),
		events:   make(chan message.Event, eventBuffer),
		overflow: make(chan struct{}, 1),
		done:     make(chan struct{}),
		check:    make(chan struct{}, 1),
		streams:  make(map[int16]chan any),
		writeSem: make(chan struct{}, 1),
		next:     1,
	}
	c.wg.Add(1)
	go c.read()
	return c
}

// Do sends req and waits for its response, bounded by ctx. An ERROR response is returned as
// *ServerError. If ctx ends first the stream stays reserved until the late answer arrives.
// ctx never harms the connection: it is checked before anything is written, bounds the wait
// for the write lock and for the reply, and the write itself has the fixed WriteTimeout.
func (c *Conn) Do(ctx context.Context, req message.Message) (message.Message, error) {
	return c.do(ctx, req, false)
}

// do is Do; a heartbeat's write is also bounded by the heartbeat's own deadline, since a
// connection that cannot take a heartbeat within its timeout is lost.
func (c *Conn) do(ctx context.Context, req message.Message, heartbeat bool) (message.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, reply, err := c.reserve()
	if err != nil {
		return nil, err
	}
	f := frame.NewFrame(c.version, id, req)
	var buf bytes.Buffer
	if err := c.codec.EncodeFrame(f, &buf); err != nil {
		c.release(id)
		return nil, fmt.Errorf("controlconn: encode %v: %w", req, err)
	}
	if err := c.write(ctx, buf.Bytes(), heartbeat); err != nil {
		if ctx.Err() != nil && c.Err() == nil { // not written: the stream is free again
			c.release(id)
		}
		return nil, err
	}
	select {
	case r := <-reply:
		switch r := r.(type) {
		case error:
			return nil, r
		case *frame.Frame:
			if e, ok := r.Body.Message.(message.Error); ok {
				return nil, &ServerError{Code: e.GetErrorCode(), Message: e.GetErrorMessage()}
			}
			return r.Body.Message, nil
		}
		return nil, fmt.Errorf("controlconn: bad reply %T", r)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Conn) reserve() (int16, chan any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	// IDs are handed out in rotation (1..maxStreams), never the one just released: a late
	// duplicate answer on a released ID then finds no request in flight and is dropped,
	// instead of answering the next request.
	for range maxStreams {
		id := c.next
		c.next = c.next%maxStreams + 1
		if _, busy := c.streams[id]; busy {
			continue
		}
		ch := make(chan any, 1)
		c.streams[id] = ch
		return id, ch, nil
	}
	return 0, nil, &ConnError{Class: ClassRetryable, Addr: c.ep.Addr, Op: "write", Err: errors.New("no free stream IDs")}
}

func (c *Conn) release(id int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.streams, id)
}

// write sends one encoded frame. Waiting for the write lock is bounded by ctx (its end is
// returned and harms nothing); the write has the fixed WriteTimeout (or, for a heartbeat, its
// own deadline if sooner). A failed or timed-out write leaves the stream in an unknown state,
// so it ends the connection.
func (c *Conn) write(ctx context.Context, b []byte, heartbeat bool) error {
	select {
	case c.writeSem <- struct{}{}:
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return ctx.Err() // nothing written; for a heartbeat, a timeout
	}
	defer func() { <-c.writeSem }()
	deadline := time.Now().Add(c.cfg.WriteTimeout)
	if d, ok := ctx.Deadline(); heartbeat && ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.nc.SetWriteDeadline(deadline)
	if _, err := c.nc.Write(b); err != nil {
		err = &ConnError{Class: ClassRetryable, Addr: c.ep.Addr, Op: "write", Err: err}
		c.shutdown(err)
		return c.Err()
	}
	return nil
}

// read is the reader goroutine: it owns the read side of nc.
func (c *Conn) read() {
	defer c.wg.Done()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		// The header is checked against MaxFrameSize before any body is read, and the body
		// buffer grows with the bytes received: a header announcing 2 GiB costs nothing.
		raw, err := wire.ReadFrame(r, c.codec, c.cfg.MaxFrameSize)
		if err != nil {
			// A TLS alert from the server is TLS: under TLS 1.3 a server refusing the client's
			// certificate (expired, another CA's, none) says so after the client's handshake
			// has returned, on the first read.
			cls := transportClass(err)
			var pv *frame.ProtocolVersionErr
			if errors.As(err, &pv) || errors.Is(err, wire.ErrFrameTooLarge) {
				cls = ClassProtocol
			}
			c.shutdown(&ConnError{Class: cls, Addr: c.ep.Addr, Op: "read", Err: err})
			return
		}
		f, err := wire.Decode(c.codec, raw)
		if raw.Header.StreamId < 0 {
			c.dispatchEvent(f, err)
			continue
		}
		if raw.Header.StreamId == 0 {
			// No request uses stream 0 (IDs start at 1). Servers answer on it when they refuse
			// a frame before reading its stream ID, above all a protocol version they do not
			// speak (Cassandra and Scylla do): an error for the whole connection, as gocql
			// takes it. Ending the connection with it hands it to every request in flight,
			// so the handshake sees the refusal and steps down a version.
			c.shutdown(streamZeroErr(c.ep.Addr, f, err))
			return
		}
		c.mu.Lock()
		reply, ok := c.streams[raw.Header.StreamId]
		delete(c.streams, raw.Header.StreamId)
		c.mu.Unlock()
		if !ok {
			c.log.Debug("response on a stream with no request in flight dropped", "stream", raw.Header.StreamId)
			if c.cfg.OnDroppedReply != nil {
				c.cfg.OnDroppedReply(c.ep, raw.Header.StreamId)
			}
			continue
		}
		if err != nil {
			reply <- &ConnError{Class: ClassProtocol, Addr: c.ep.Addr, Op: "read", Err: err}
		} else {
			reply <- f
		}
	}
}

// streamZeroErr is the connection's error for a frame on stream 0: the server's ERROR as a
// *ServerError (within a protocol-class ConnError), or why the frame could not be read.
func streamZeroErr(addr string, f *frame.Frame, err error) error {
	if err == nil {
		if e, ok := f.Body.Message.(message.Error); ok {
			err = &ServerError{Code: e.GetErrorCode(), Message: e.GetErrorMessage()}
		} else {
			err = fmt.Errorf("unexpected %v on stream 0", f.Body.Message)
		}
	}
	return &ConnError{Class: ClassProtocol, Addr: addr, Op: "read", Err: err}
}

func (c *Conn) dispatchEvent(f *frame.Frame, err error) {
	if err != nil {
		c.log.Warn("undecodable event", "err", err)
		c.signalOverflow()
		return
	}
	ev, ok := f.Body.Message.(message.Event)
	if !ok {
		c.log.Debug("unexpected server-initiated message", "msg", f.Body.Message)
		return
	}
	select {
	case c.events <- ev:
	default:
		// Never block the reader (heartbeats and responses ride on it); the consumer learns it
		// must resynchronise from Overflow.
		c.signalOverflow()
	}
}

func (c *Conn) signalOverflow() {
	select {
	case c.overflow <- struct{}{}:
	default:
	}
}

// CheckNow asks for a heartbeat at once instead of at the next interval: someone else (gocql's
// session, say) reports the node down, and a node that stopped answering (SIGSTOP, a half-open
// link) would otherwise hold this connection for up to HeartbeatInterval + HeartbeatTimeout.
// At most one check runs at a time and checks are at least minCheckGap apart; extra requests
// are dropped.
func (c *Conn) CheckNow() {
	select {
	case c.check <- struct{}{}:
	default:
	}
}

// minCheckGap spaces the heartbeats CheckNow asks for, so that a burst of reports costs one.
const minCheckGap = time.Second

// heartbeat is the heartbeat goroutine: an OPTIONS every interval (or when CheckNow asks, at
// most once per minCheckGap), each bounded by the timeout.
func (c *Conn) heartbeat() {
	defer c.wg.Done()
	t := time.NewTimer(c.cfg.HeartbeatInterval)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		case <-c.check:
			if time.Since(last) < minCheckGap {
				continue
			}
		}
		last = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.HeartbeatTimeout)
		start := time.Now()
		_, err := c.do(ctx, &message.Options{}, true)
		cancel()
		rtt := time.Since(start)
		if err != nil && c.Err() == nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = ErrHeartbeat
			}
			err = &ConnError{Class: ClassRetryable, Addr: c.ep.Addr, Op: "heartbeat", Err: err}
		}
		if c.cfg.OnHeartbeat != nil {
			c.cfg.OnHeartbeat(c.ep, rtt, err)
		}
		if err != nil {
			c.shutdown(err)
			return
		}
		t.Reset(c.cfg.HeartbeatInterval)
	}
}

// shutdown ends the connection once: records why, closes the socket, fails waiting requests.
func (c *Conn) shutdown(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.streams
	c.streams = map[int16]chan any{}
	c.mu.Unlock()
	_ = c.nc.SetDeadline(time.Now()) // unblocks the reader even on a transport whose Close does not
	_ = c.nc.Close()
	for _, reply := range pending {
		reply <- err
	}
	close(c.done)
}

// Close closes the connection and waits for its goroutines. It is idempotent.
func (c *Conn) Close() error {
	c.shutdown(&ConnError{Class: ClassClosed, Addr: c.ep.Addr, Op: "close", Err: ErrClosed})
	c.wg.Wait()
	return nil
}

// Done is closed when the connection is lost or closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Events delivers server-pushed events in arrival order. It is never closed; select on Done too.
func (c *Conn) Events() <-chan message.Event { return c.events }

// Overflow is signalled (coalesced) when events were dropped because Events was full, or one
// could not be decoded: the consumer should refresh its view in full.
func (c *Conn) Overflow() <-chan struct{} { return c.overflow }

// Endpoint returns the endpoint this connection was dialled to.
func (c *Conn) Endpoint() Endpoint { return c.ep }

// Version returns the negotiated protocol version.
func (c *Conn) Version() primitive.ProtocolVersion { return c.version }

// LocalAddr returns the local socket address (as the server sees the client).
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }
