package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// DialFunc opens a connection to a node's CQL port ("ip:port"): a TCP dial for real Cassandra,
// cqlsim's Cluster.DialContext for an in-memory simulator.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// requestTimeout bounds one request of the recorder's client.
const requestTimeout = 10 * time.Second

// conn is a minimal protocol v4 client: one request at a time, events collected as they come.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	codec  frame.Codec
	stream int16
}

func dialV4(ctx context.Context, dial DialFunc, addr string) (*conn, error) {
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, br: bufio.NewReader(nc), codec: frame.NewCodec()}, nil
}

func (c *conn) close() { _ = c.nc.Close() }

// request sends m and returns the answer, skipping events.
func (c *conn) request(m message.Message) (message.Message, error) {
	c.stream++
	var buf bytes.Buffer
	if err := c.codec.EncodeFrame(frame.NewFrame(primitive.ProtocolVersion4, c.stream, m), &buf); err != nil {
		return nil, err
	}
	_ = c.nc.SetDeadline(time.Now().Add(requestTimeout))
	defer func() { _ = c.nc.SetDeadline(time.Time{}) }()
	if _, err := c.nc.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	for {
		f, err := c.codec.DecodeFrame(c.br)
		if err != nil {
			return nil, err
		}
		if f.Header.StreamId == c.stream {
			if e, ok := f.Body.Message.(message.Error); ok {
				return nil, fmt.Errorf("error 0x%04x: %s", uint32(e.GetErrorCode()), e.GetErrorMessage())
			}
			return f.Body.Message, nil
		}
	}
}

func (c *conn) startup() error {
	resp, err := c.request(&message.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	if err != nil {
		return err
	}
	if _, ok := resp.(*message.Ready); !ok {
		return fmt.Errorf("STARTUP answered with %v", resp)
	}
	return nil
}

// ProbeProtocol records addr's SUPPORTED options, its answer to a STARTUP in each protocol version
// (3 to 7, each with and without USE_BETA), and the columns of system.local, system.peers and
// system.peers_v2.
func ProbeProtocol(ctx context.Context, dial DialFunc, addr string) (*Protocol, error) {
	p := &Protocol{Tables: map[string][]Column{}}
	c, err := dialV4(ctx, dial, addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	resp, err := c.request(&message.Options{})
	if err != nil {
		return nil, fmt.Errorf("OPTIONS: %w", err)
	}
	sup, ok := resp.(*message.Supported)
	if !ok {
		return nil, fmt.Errorf("OPTIONS answered with %v", resp)
	}
	p.Supported = sup.Options
	for _, vs := range p.Supported {
		slices.Sort(vs)
	}
	if err := c.startup(); err != nil {
		return nil, err
	}
	for _, table := range []string{"system.local", "system.peers", "system.peers_v2"} {
		resp, err := c.request(&message.Query{Query: "SELECT * FROM " + table,
			Options: &message.QueryOptions{Consistency: primitive.ConsistencyLevelOne}})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
		rows, ok := resp.(*message.RowsResult)
		if !ok {
			return nil, fmt.Errorf("%s answered with %v", table, resp)
		}
		var cols []Column
		for _, col := range rows.Metadata.Columns {
			cols = append(cols, Column{Name: col.Name, Type: fmt.Sprint(col.Type)})
		}
		p.Tables[table] = cols
	}
	for v := 3; v <= 7; v++ {
		for _, beta := range []bool{false, true} {
			a, err := askVersion(ctx, dial, addr, v, beta)
			if err != nil {
				return nil, err
			}
			p.Versions = append(p.Versions, a)
		}
	}
	return p, nil
}

var opcodeNames = map[byte]string{0x00: "ERROR", 0x02: "READY", 0x03: "AUTHENTICATE", 0x06: "SUPPORTED",
	0x08: "RESULT", 0x0C: "EVENT"}

// askVersion sends a STARTUP in version v as the first frame of a new connection, written by
// hand (the protocol library has no v6 or v7), and returns the answering frame's version,
// opcode and, for an ERROR, its code and message.
func askVersion(ctx context.Context, dial DialFunc, addr string, v int, beta bool) (VersionAnswer, error) {
	a := VersionAnswer{Asked: v, Beta: beta}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return a, err
	}
	defer func() { _ = nc.Close() }()
	_ = nc.SetDeadline(time.Now().Add(requestTimeout))
	body := binary.BigEndian.AppendUint16(nil, 1)
	for _, s := range []string{"CQL_VERSION", "3.0.0"} {
		body = binary.BigEndian.AppendUint16(body, uint16(len(s)))
		body = append(body, s...)
	}
	flags := byte(0)
	if beta {
		flags = byte(primitive.HeaderFlagUseBeta)
	}
	out := []byte{byte(v), flags, 0, 1, byte(primitive.OpCodeStartup)}
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	if _, err := nc.Write(append(out, body...)); err != nil {
		a.Failure = "write: " + err.Error()
		return a, nil
	}
	var head [9]byte
	if _, err := io.ReadFull(nc, head[:]); err != nil {
		a.Failure = readFailure(err)
		return a, nil
	}
	a.Version = int(head[0] & 0x7f)
	op := head[4]
	a.Opcode = opcodeNames[op]
	if a.Opcode == "" {
		a.Opcode = fmt.Sprintf("0x%02X", op)
	}
	if op != 0x00 {
		return a, nil
	}
	n := binary.BigEndian.Uint32(head[5:])
	if n > 1<<16 {
		a.Failure = fmt.Sprintf("error body of %d bytes", n)
		return a, nil
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(nc, msg); err != nil || n < 6 {
		a.Failure = "short error body"
		return a, nil
	}
	a.Code = int(binary.BigEndian.Uint32(msg))
	l := int(binary.BigEndian.Uint16(msg[4:]))
	if 6+l <= len(msg) {
		a.Message = string(msg[6 : 6+l])
	}
	return a, nil
}

func readFailure(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "reset"
}

// Recorder watches a cluster's events: one REGISTERed connection per node (TOPOLOGY_CHANGE,
// STATUS_CHANGE, SCHEMA_CHANGE), each pushed event recorded with its time, receiver and the
// node it names. Addresses are named by their position in the host list given to NewRecorder
// and to Rename.
type Recorder struct {
	dial DialFunc
	port int

	mu     sync.Mutex
	zero   time.Time
	hosts  []string // node i's address
	events []Event
	phases []Phase
	conns  map[string]*conn // by receiver name
	wg     sync.WaitGroup
	change chan struct{} // closed and replaced on every event
}

// NewRecorder returns a recorder for the nodes at hosts (node i at hosts[i]) on port.
func NewRecorder(dial DialFunc, hosts []string, port int) *Recorder {
	return &Recorder{dial: dial, port: port, hosts: slices.Clone(hosts), conns: map[string]*conn{}, change: make(chan struct{})}
}

// AddHost names a new node (the next index).
func (r *Recorder) AddHost(host string) {
	r.mu.Lock()
	r.hosts = append(r.hosts, host)
	r.mu.Unlock()
}

// Begin starts a new scenario: events and phases are forgotten and times count from now.
func (r *Recorder) Begin() {
	r.mu.Lock()
	r.zero, r.events, r.phases = time.Now(), nil, nil
	r.mu.Unlock()
}

// Mark records phase what of node i (-1: the cluster) at time at.
func (r *Recorder) Mark(what string, i int, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Phase{MS: at.Sub(r.zero).Milliseconds(), What: what}
	if i >= 0 {
		p.Node = NodeName(i)
	}
	r.phases = append(r.phases, p)
}

// Trace returns what was recorded since Begin.
func (r *Recorder) Trace(source, scenario string, nodes int) *Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &Trace{Source: source, Scenario: scenario, Nodes: nodes, Phases: slices.Clone(r.phases), Events: slices.Clone(r.events)}
	slices.SortStableFunc(t.Phases, func(a, b Phase) int { return int(a.MS - b.MS) })
	return t
}

// Watch opens node i's event connection (closing an earlier one of it).
func (r *Recorder) Watch(ctx context.Context, i int) error {
	r.mu.Lock()
	host, name := r.hosts[i], NodeName(i)
	r.mu.Unlock()
	c, err := dialV4(ctx, r.dial, net.JoinHostPort(host, fmt.Sprint(r.port)))
	if err != nil {
		return fmt.Errorf("watch %s: %w", name, err)
	}
	if err := c.startup(); err != nil {
		c.close()
		return fmt.Errorf("watch %s: %w", name, err)
	}
	if _, err := c.request(&message.Register{EventTypes: []primitive.EventType{primitive.EventTypeTopologyChange,
		primitive.EventTypeStatusChange, primitive.EventTypeSchemaChange}}); err != nil {
		c.close()
		return fmt.Errorf("watch %s: REGISTER: %w", name, err)
	}
	r.mu.Lock()
	if old := r.conns[name]; old != nil {
		old.close()
	}
	r.conns[name] = c
	r.mu.Unlock()
	r.wg.Add(1)
	go r.read(c, name)
	return nil
}

// read records c's events until it closes.
func (r *Recorder) read(c *conn, to string) {
	defer r.wg.Done()
	for {
		f, err := c.codec.DecodeFrame(c.br)
		if err != nil {
			return
		}
		at := time.Now()
		ev, ok := f.Body.Message.(message.Event)
		if !ok || f.Header.StreamId != -1 {
			continue
		}
		r.mu.Lock()
		e := Event{MS: at.Sub(r.zero).Milliseconds(), To: to}
		switch m := ev.(type) {
		case *message.StatusChangeEvent:
			e.Type, e.Change, e.About, e.Port = "STATUS_CHANGE", string(m.ChangeType), r.name(m.Address.Addr), int(m.Address.Port)
		case *message.TopologyChangeEvent:
			e.Type, e.Change, e.About, e.Port = "TOPOLOGY_CHANGE", string(m.ChangeType), r.name(m.Address.Addr), int(m.Address.Port)
		case *message.SchemaChangeEvent:
			e.Type, e.Change, e.Target, e.About = "SCHEMA_CHANGE", string(m.ChangeType), string(m.Target), m.Keyspace
			if m.Object != "" {
				e.About += "." + m.Object
			}
		default:
			e.Type = fmt.Sprintf("%T", ev)
		}
		if e.Port == r.port {
			e.Port = 0 // the cluster's CQL port: left out, as any port of a recording is
		}
		r.events = append(r.events, e)
		close(r.change)
		r.change = make(chan struct{})
		r.mu.Unlock()
	}
}

// name normalises an address to its node's name.
func (r *Recorder) name(ip net.IP) string {
	for i, h := range r.hosts {
		if ip.Equal(net.ParseIP(h)) {
			return NodeName(i)
		}
	}
	return ip.String()
}

// Has reports whether node to has received change about node about since Begin.
func (r *Recorder) Has(to, change, about int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.To == NodeName(to) && e.Change == toChange(change) && e.About == NodeName(about) {
			return true
		}
	}
	return false
}

func toChange(c int) string { return changeNames[c] }

// Changes a wait can ask for (Has, AwaitAll).
const (
	Up = iota
	Down
	NewNode
	Removed
)

var changeNames = []string{"UP", "DOWN", "NEW_NODE", "REMOVED_NODE"}

// AwaitAll waits until every node of receivers has received change about node about, or until
// within passes (then it returns false), and then until no event has come for quiet.
func (r *Recorder) AwaitAll(receivers []int, change, about int, within, quiet time.Duration) bool {
	deadline := time.Now().Add(within)
	all := false
	for time.Now().Before(deadline) {
		all = true
		for _, to := range receivers {
			if !r.Has(to, change, about) {
				all = false
			}
		}
		if all {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Quiet(quiet, within)
	return all
}

// Quiet waits until no event has arrived for d (at most max).
func (r *Recorder) Quiet(d, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		ch := r.change
		r.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ch:
			t.Stop()
		case <-t.C:
			return
		}
	}
}

// Close closes every event connection and waits for their readers.
func (r *Recorder) Close() {
	r.mu.Lock()
	for name, c := range r.conns {
		c.close()
		delete(r.conns, name)
	}
	r.mu.Unlock()
	r.wg.Wait()
}
