package cqlsim

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// DefaultMemoryPort is the CQL port of an in-memory cluster whose Config.Port is 0: no port is taken
// on the machine, so the usual one serves.
const DefaultMemoryPort = 9042

// memBacklog is an in-memory listener's accept queue: dials beyond it are refused.
const memBacklog = 128

// StartInMemory starts a cluster like Start, on an in-memory network instead of sockets: nodes
// listen on net.Pipe listeners at the same addresses (BaseIP+i, port Config.Port or
// DefaultMemoryPort), and clients reach them only through Cluster.DialContext. Pipes block durably,
// so the whole cluster, its gossip delays and its clients' timers run in virtual time inside a
// testing/synctest bubble (start it inside the bubble), where a real socket would stop the clock.
//
// Faults keep their meaning, with two differences a pipe imposes: Kill closes connections as
// Stop does (a pipe has no RST; the client reads EOF), and a dial to a blackholed node waits
// until its context ends (or the blackhole ends) and then fails with a timeout. StartStatic has no
// in-memory form.
func StartInMemory(cfg Config) (*Cluster, error) {
	if cfg.Port == 0 {
		cfg.Port = DefaultMemoryPort
	}
	return start(cfg, &memNet{listeners: map[string]*pipeListener{}})
}

// DialContext connects to the node listening at addr ("ip:port"), as gocql.Dialer and
// cqlconn.ConnConfig.Dialer do. In memory it is the only way in: an address no node listens
// on is refused as a closed port refuses. On sockets it is a plain TCP dial. Either way the
// address is recorded (Dials).
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c.countMu.Lock()
	c.dials = append(c.dials, addr)
	c.countMu.Unlock()
	if c.mem == nil {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	for {
		n := c.nodeAt(addr)
		if n == nil || !n.blackholed() {
			break
		}
		// The SYN is dropped: wait for the caller to give up, or for the node to change state.
		select {
		case <-n.gate():
		case <-ctx.Done():
			err := ctx.Err()
			if errors.Is(err, context.DeadlineExceeded) {
				err = os.ErrDeadlineExceeded
			}
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: memAddr(addr), Err: err}
		}
	}
	return c.mem.connect(addr)
}

// Dials returns every address dialled through DialContext so far, in order, refused ones included.
func (c *Cluster) Dials() []string {
	c.countMu.Lock()
	defer c.countMu.Unlock()
	return append([]string(nil), c.dials...)
}

// nodeAt is the node whose CQL port is addr, or nil.
func (c *Cluster) nodeAt(addr string) *Node {
	for _, n := range c.allNodes() {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// listen opens a node's CQL port on the cluster's network.
func (c *Cluster) listen(addr string) (net.Listener, error) {
	if c.mem != nil {
		return c.mem.listen(addr)
	}
	ln, err := listenTCP(addr)
	if err != nil {
		return nil, err // not a nil *net.TCPListener in a non-nil interface
	}
	return ln, nil
}

// memNet is an in-memory cluster's network: the open listeners by address.
type memNet struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener // guarded by mu
	clients   int                      // connections made, numbering the clients' ports; guarded by mu
}

func (m *memNet) listen(addr string) (net.Listener, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listeners[addr] != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: memAddr(addr), Err: syscall.EADDRINUSE}
	}
	l := &pipeListener{net: m, addr: memAddr(addr), queue: make(chan net.Conn, memBacklog), done: make(chan struct{})}
	m.listeners[addr] = l
	return l, nil
}

// connect opens a pipe to the listener at addr and queues its server end for Accept.
func (m *memNet) connect(addr string) (net.Conn, error) {
	m.mu.Lock()
	l := m.listeners[addr]
	m.clients++
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 32768 + m.clients%28000}
	m.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: memAddr(addr), Err: syscall.ECONNREFUSED}
	if l == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	if !l.enqueue(&pipeConn{Conn: server, local: l.addr, remote: local}) {
		_ = client.Close()
		_ = server.Close()
		return nil, refused
	}
	return &pipeConn{Conn: client, local: local, remote: l.addr}, nil
}

// memAddr is addr as a TCP address (a node's "ip:port" always parses).
func memAddr(addr string) *net.TCPAddr {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return &net.TCPAddr{IP: net.ParseIP(host), Port: p}
}

// pipeListener is a net.Listener whose connections are net.Pipe ends handed over by memNet.connect.
type pipeListener struct {
	net   *memNet
	addr  *net.TCPAddr
	queue chan net.Conn // connected, not yet accepted
	done  chan struct{} // closed by Close

	mu     sync.Mutex // orders enqueue against Close, so no connection is left in the queue
	closed bool       // guarded by mu
}

func (l *pipeListener) enqueue(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	select {
	case l.queue <- c:
		return true
	default: // the accept queue is full
		return false
	}
}

// Accept returns the next connection, or net.ErrClosed once the listener is closed.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close takes the address off the network and closes the connections not yet accepted, as the
// kernel resets a closed listener's queue.
func (l *pipeListener) Close() error {
	l.net.mu.Lock()
	if l.net.listeners[l.addr.String()] == l {
		delete(l.net.listeners, l.addr.String())
	}
	l.net.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.done)
	for {
		select {
		case c := <-l.queue:
			_ = c.Close()
		default:
			return nil
		}
	}
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

// pipeConn is a pipe end with TCP addresses, so that records and logs name the two sides.
type pipeConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }
