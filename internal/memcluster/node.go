package memcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// QueryHook answers a QUERY or EXECUTE before the node's own tables do; it returns nil for a
// query it leaves to them. It is called from the connections' goroutines.
type QueryHook func(query string, values []*primitive.Value) message.Message

// Node is one CQL server: it answers OPTIONS, STARTUP (with PasswordAuthenticator when
// Username is set), REGISTER, QUERY, PREPARE and EXECUTE, pushes events, and can go silent like
// a half-open peer. A query neither OnQuery nor the node's cluster answers gets empty rows for a
// system table and a void result otherwise.
//
// The zero value is a node outside any cluster, ready to serve. The exported fields are its
// configuration: set them before the first connection and leave them.
type Node struct {
	MaxVersion primitive.ProtocolVersion // greatest protocol version accepted; 0 means 4
	Username   string                    // require PasswordAuthenticator when not empty
	Password   string
	FirstDelay time.Duration // wait before answering the first request of each connection
	OnQuery    QueryHook     // nil: none

	tables func(query string) message.Message // the cluster's system tables; nil outside a cluster

	silent    atomic.Bool
	registers atomic.Int32
	options   atomic.Int32
	accepted  atomic.Int32
	queries   atomic.Int32

	mu    sync.Mutex
	conns map[net.Conn]*conn // live connections; guarded by mu
	wg    sync.WaitGroup     // one per connection goroutine
}

// conn is one client connection; its goroutine (Node.serve) reads, anyone may write.
type conn struct {
	nc      net.Conn
	writeMu sync.Mutex   // one frame at a time: answers and pushed events interleave
	version atomic.Int32 // protocol version of the last request, for pushed events
}

var frameCodec = frame.NewRawCodec()

// DialContext implements gocql.Dialer: whatever the address, the connection reaches n.
func (n *Node) DialContext(_ context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	n.ServeConn(server)
	return client, nil
}

// ServeConn serves nc in a goroutine of its own until nc fails or n is closed, then closes nc.
func (n *Node) ServeConn(nc net.Conn) {
	n.accepted.Add(1)
	c := &conn{nc: nc}
	n.mu.Lock()
	if n.conns == nil {
		n.conns = map[net.Conn]*conn{}
	}
	n.conns[nc] = c
	n.mu.Unlock()
	n.wg.Add(1)
	go n.serve(c)
}

// Close crashes n as its clients see it: every connection drops. It returns once their
// goroutines have ended.
func (n *Node) Close() {
	n.mu.Lock()
	for nc := range n.conns {
		_ = nc.Close()
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// SetSilent makes n stop answering requests (true) or answer again (false); its connections
// stay open either way, as a half-open peer's do.
func (n *Node) SetSilent(silent bool) { n.silent.Store(silent) }

// Open is the number of client connections open.
func (n *Node) Open() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.conns)
}

// Accepted is the number of connections served.
func (n *Node) Accepted() int { return int(n.accepted.Load()) }

// Options is the number of OPTIONS requests answered: handshakes and heartbeats.
func (n *Node) Options() int { return int(n.options.Load()) }

// Registers is the number of REGISTER requests answered.
func (n *Node) Registers() int { return int(n.registers.Load()) }

// Queries is the number of QUERY requests answered.
func (n *Node) Queries() int { return int(n.queries.Load()) }

// Push sends ev to every connected client, in the protocol version each last spoke.
func (n *Node) Push(ev message.Event) {
	n.mu.Lock()
	conns := make([]*conn, 0, len(n.conns))
	for _, c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		v := primitive.ProtocolVersion(c.version.Load())
		if v == 0 {
			v = primitive.ProtocolVersion4
		}
		c.send(v, -1, ev)
	}
}

func (n *Node) serve(c *conn) {
	defer n.wg.Done()
	defer func() {
		n.mu.Lock()
		delete(n.conns, c.nc)
		n.mu.Unlock()
		_ = c.nc.Close()
	}()
	r := bufio.NewReader(c.nc)
	for first := true; ; first = false {
		raw, err := frameCodec.DecodeRawFrame(r)
		if err != nil {
			return
		}
		if first && n.FirstDelay > 0 {
			time.Sleep(n.FirstDelay)
		}
		n.handle(c, raw)
	}
}

func (n *Node) maxVersion() primitive.ProtocolVersion {
	if n.MaxVersion == 0 {
		return primitive.ProtocolVersion4
	}
	return n.MaxVersion
}

func (n *Node) handle(c *conn, raw *frame.RawFrame) {
	if n.silent.Load() {
		return
	}
	v, maxV := raw.Header.Version, n.maxVersion()
	if v > maxV {
		c.send(maxV, raw.Header.StreamId, &message.ProtocolError{ErrorMessage: fmt.Sprintf(
			"Invalid or unsupported protocol version (%d); the lowest supported version is 3 and the greatest is %d", v, maxV)})
		return
	}
	c.version.Store(int32(v))
	f, err := frameCodec.ConvertFromRawFrame(raw)
	if err != nil {
		c.send(v, raw.Header.StreamId, &message.ProtocolError{ErrorMessage: err.Error()})
		return
	}
	var resp message.Message
	switch m := f.Body.Message.(type) {
	case *message.Options:
		n.options.Add(1)
		resp = &message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.4"}, "COMPRESSION": {}}}
	case *message.Startup:
		if n.Username != "" {
			resp = &message.Authenticate{Authenticator: "org.apache.cassandra.auth.PasswordAuthenticator"}
		} else {
			resp = &message.Ready{}
		}
	case *message.AuthResponse:
		parts := bytes.Split(m.Token, []byte{0})
		if len(parts) == 3 && string(parts[1]) == n.Username && string(parts[2]) == n.Password {
			resp = &message.AuthSuccess{}
		} else {
			resp = &message.AuthenticationError{ErrorMessage: "Provided username and/or password are incorrect"}
		}
	case *message.Register:
		n.registers.Add(1)
		resp = &message.Ready{}
	case *message.Query:
		n.queries.Add(1)
		resp = n.query(m.Query, m.Options)
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
		resp = n.query(string(m.QueryId), m.Options)
	default:
		resp = &message.ProtocolError{ErrorMessage: fmt.Sprintf("unsupported %v", m)}
	}
	c.send(v, raw.Header.StreamId, resp)
}

func (n *Node) query(q string, opts *message.QueryOptions) message.Message {
	var values []*primitive.Value
	if opts != nil {
		values = opts.PositionalValues
	}
	if n.OnQuery != nil {
		if m := n.OnQuery(q, values); m != nil {
			return m
		}
	}
	if n.tables != nil {
		if m := n.tables(q); m != nil {
			return m
		}
	}
	if strings.Contains(strings.ToLower(q), "system.") {
		return &message.RowsResult{Metadata: &message.RowsMetadata{}}
	}
	return &message.VoidResult{}
}

// send writes one frame; a write to a connection that is gone is dropped, as its reader will
// find out.
func (c *conn) send(v primitive.ProtocolVersion, stream int16, m message.Message) {
	var buf bytes.Buffer
	if err := frameCodec.EncodeFrame(frame.NewFrame(v, stream, m), &buf); err != nil {
		panic(err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, _ = c.nc.Write(buf.Bytes())
}
