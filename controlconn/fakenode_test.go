package controlconn

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// fakeNode is a minimal CQL server for connection-level tests: it answers the handshake,
// authenticates, records REGISTER, serves queries through onQuery, pushes events and can go
// silent to imitate a half-open peer.
type fakeNode struct {
	maxVersion primitive.ProtocolVersion // greatest version accepted; default 4
	user, pass string                    // require PasswordAuthenticator when user != ""
	onQuery    func(q string, values []*primitive.Value) message.Message
	firstDelay time.Duration // wait before answering the first request of each connection

	silent    atomic.Bool  // stop answering requests (connections stay open)
	registers atomic.Int32 // REGISTER requests served
	options   atomic.Int32 // OPTIONS requests served (handshake + heartbeats)
	accepted  atomic.Int32
	queries   atomic.Int32 // QUERY requests served

	mu    sync.Mutex
	conns map[net.Conn]*fakeConn
	ln    net.Listener
	wg    sync.WaitGroup
}

type fakeConn struct {
	nc      net.Conn
	writeMu sync.Mutex
	version atomic.Int32 // last request version, read by push
}

var fakeCodec = frame.NewRawCodec()

// listen serves on addr ("127.0.0.1:0" for any port) until the test ends.
func (n *fakeNode) listen(t testing.TB, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	n.ln = ln
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			n.serve(nc)
		}
	}()
	t.Cleanup(n.close)
	return ln.Addr().String()
}

func (n *fakeNode) close() {
	if n.ln != nil {
		_ = n.ln.Close()
	}
	n.dropAll()
	n.wg.Wait()
}

// dropAll closes every client connection (a node crash as seen by clients).
func (n *fakeNode) dropAll() {
	n.mu.Lock()
	for nc := range n.conns {
		_ = nc.Close()
	}
	n.mu.Unlock()
}

// serve handles one client connection in its own goroutine.
func (n *fakeNode) serve(nc net.Conn) {
	n.accepted.Add(1)
	fc := &fakeConn{nc: nc}
	n.mu.Lock()
	if n.conns == nil {
		n.conns = map[net.Conn]*fakeConn{}
	}
	n.conns[nc] = fc
	n.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer func() {
			n.mu.Lock()
			delete(n.conns, nc)
			n.mu.Unlock()
			_ = nc.Close()
		}()
		r := bufio.NewReader(nc)
		for first := true; ; first = false {
			raw, err := fakeCodec.DecodeRawFrame(r)
			if err != nil {
				return
			}
			if first && n.firstDelay > 0 {
				time.Sleep(n.firstDelay)
			}
			n.handle(fc, raw)
		}
	}()
}

func (n *fakeNode) max() primitive.ProtocolVersion {
	if n.maxVersion == 0 {
		return primitive.ProtocolVersion4
	}
	return n.maxVersion
}

func (n *fakeNode) handle(fc *fakeConn, raw *frame.RawFrame) {
	if n.silent.Load() {
		return
	}
	v := raw.Header.Version
	if v > n.max() {
		fc.send(n.max(), raw.Header.StreamId, &message.ProtocolError{ErrorMessage: fmt.Sprintf(
			"Invalid or unsupported protocol version (%d); the lowest supported version is 3 and the greatest is %d", v, n.max())})
		return
	}
	fc.version.Store(int32(v))
	f, err := fakeCodec.ConvertFromRawFrame(raw)
	if err != nil {
		fc.send(v, raw.Header.StreamId, &message.ProtocolError{ErrorMessage: err.Error()})
		return
	}
	var resp message.Message
	switch m := f.Body.Message.(type) {
	case *message.Options:
		n.options.Add(1)
		resp = &message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.4"}, "COMPRESSION": {}}}
	case *message.Startup:
		if n.user != "" {
			resp = &message.Authenticate{Authenticator: "org.apache.cassandra.auth.PasswordAuthenticator"}
		} else {
			resp = &message.Ready{}
		}
	case *message.AuthResponse:
		parts := bytes.Split(m.Token, []byte{0})
		if len(parts) == 3 && string(parts[1]) == n.user && string(parts[2]) == n.pass {
			resp = &message.AuthSuccess{}
		} else {
			resp = &message.AuthenticationError{ErrorMessage: "Provided username and/or password are incorrect"}
		}
	case *message.Register:
		n.registers.Add(1)
		resp = &message.Ready{}
	case *message.Query:
		n.queries.Add(1)
		var vals []*primitive.Value
		if m.Options != nil {
			vals = m.Options.PositionalValues
		}
		resp = n.query(m.Query, vals)
	case *message.Prepare:
		// Every bind marker is a varchar; the query text is the statement ID.
		vm := &message.VariablesMetadata{}
		for i := range strings.Count(m.Query, "?") {
			vm.Columns = append(vm.Columns, &message.ColumnMetadata{Keyspace: "ks", Table: "t",
				Name: fmt.Sprintf("v%d", i), Index: int32(i), Type: datatype.Varchar})
		}
		resp = &message.PreparedResult{PreparedQueryId: []byte(m.Query), VariablesMetadata: vm,
			ResultMetadata: &message.RowsMetadata{}}
	case *message.Execute:
		var vals []*primitive.Value
		if m.Options != nil {
			vals = m.Options.PositionalValues
		}
		resp = n.query(string(m.QueryId), vals)
	default:
		resp = &message.ProtocolError{ErrorMessage: fmt.Sprintf("unsupported %v", m)}
	}
	fc.send(v, raw.Header.StreamId, resp)
}

func (n *fakeNode) query(q string, vals []*primitive.Value) message.Message {
	if n.onQuery != nil {
		if m := n.onQuery(q, vals); m != nil {
			return m
		}
	}
	if strings.Contains(strings.ToLower(q), "system.") {
		return &message.RowsResult{Metadata: &message.RowsMetadata{}}
	}
	return &message.VoidResult{}
}

func (fc *fakeConn) send(v primitive.ProtocolVersion, stream int16, m message.Message) {
	var buf bytes.Buffer
	if err := fakeCodec.EncodeFrame(frame.NewFrame(v, stream, m), &buf); err != nil {
		panic(err)
	}
	fc.writeMu.Lock()
	defer fc.writeMu.Unlock()
	_, _ = fc.nc.Write(buf.Bytes())
}

// push sends an event to every connected client.
func (n *fakeNode) push(ev message.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, fc := range n.conns {
		v := primitive.ProtocolVersion(fc.version.Load())
		if v == 0 {
			v = primitive.ProtocolVersion4
		}
		fc.send(v, -1, ev)
	}
}

// pipeDialer hands out in-memory connections served by a fakeNode; usable inside synctest bubbles.
type pipeDialer struct {
	node  *fakeNode
	dials atomic.Int32
}

func (d *pipeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	client, server := net.Pipe()
	d.node.serve(server)
	return client, nil
}
