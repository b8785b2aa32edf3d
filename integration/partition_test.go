package integration

import (
	"context"
	"net"
	"sync"
	"syscall"
)

// partition is a client-side network partition between one client and the cluster: it is
// the client's Dialer (gocql.Dialer), and while cut it refuses every dial and has closed every
// connection it made, as a firewall rejecting the client's traffic would. The cluster itself
// keeps running and gossiping, so nodes can change while the client cannot see them.
type partition struct {
	d net.Dialer

	mu    sync.Mutex
	cut   bool                  // guarded by mu
	conns map[net.Conn]struct{} // live connections made through it; guarded by mu
}

func newPartition() *partition { return &partition{conns: map[net.Conn]struct{}{}} }

// DialContext implements gocql.Dialer.
func (p *partition) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	nc, err := p.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut { // cut while dialling
		_ = nc.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	tracked := &partitionedConn{Conn: nc, p: p}
	p.conns[tracked] = struct{}{}
	return tracked, nil
}

// setCut cuts (true) or heals (false) the path; cutting closes every live connection.
func (p *partition) setCut(cut bool) {
	p.mu.Lock()
	p.cut = cut
	var conns []net.Conn
	if cut {
		for c := range p.conns {
			conns = append(conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// partitionedConn forgets itself on Close.
type partitionedConn struct {
	net.Conn
	p *partition
}

func (c *partitionedConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.conns, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}
