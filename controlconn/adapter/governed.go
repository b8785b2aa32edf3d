package adapter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// What every adapter installs on its driver with the governor, written once: the driver's
// types are the type parameters (gocql v1's and v2's *HostInfo and *DialedHost).

// Host is what a driver's host record says of the address dialled (gocql v1's and v2's
// *HostInfo have these methods).
type Host interface {
	ConnectAddress() net.IP
	Port() int
	ConnectAddressAndPort() string
	HostnameAndPort() string
}

// HostDialer is a driver's host dialer: D is what it returns (gocql's *DialedHost).
type HostDialer[H Host, D any] interface {
	DialHost(ctx context.Context, host H) (D, error)
}

// HostAddr is the address a driver dials for host (AddrPort), without allocating. A host
// whose ConnectAddress panics (gocql v1's does on a host without a valid address) is not ok.
func HostAddr[H Host](host H) (ap netip.AddrPort, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return AddrPort(host.ConnectAddress(), host.Port())
}

// GovernedDialer is the host dialer an adapter installs on its driver with the governor:
// every dial of the sessions created from the configuration, control connection and pools,
// asks Gate first. A refused dial fails at once with an error wrapping ErrGoverned and sends
// nothing; a host without a valid address is left to Inner, which reports it its own way. It
// allocates nothing of its own.
type GovernedDialer[H Host, D any] struct {
	Gate  Gate
	Inner HostDialer[H, D]
}

// DialHost implements the driver's HostDialer.
func (d *GovernedDialer[H, D]) DialHost(ctx context.Context, host H) (D, error) {
	addr, ok := HostAddr(host)
	if !ok {
		return d.Inner.DialHost(ctx, host)
	}
	first, err := d.Gate.Admit(ctx, addr)
	if err != nil {
		var zero D
		return zero, err
	}
	dh, err := d.Inner.DialHost(ctx, host)
	d.Gate.Done(ctx, addr, first, err)
	return dh, err
}

// ConvictionPolicy is a driver's conviction policy.
type ConvictionPolicy[H any] interface {
	AddFailure(err error, host H) bool
	Reset(host H)
}

// GovernedConviction is the conviction policy an adapter installs with the governor, around
// the one configured: a refused dial sent nothing and says nothing about the host, so it never
// convicts (the driver would mark the host down and tell every listener, on every refused
// fill); every other failure is Inner's to judge. The driver calls it on the goroutine that
// filled the pool, and only when the fill left the pool with no connection (gocql v1.7.0 and
// v2.1.2, fillingStopped): a refusal then goes to Refused (the adapter's Gate.PoolEmpty), if
// set. Otherwise it takes no lock and allocates nothing.
type GovernedConviction[H any] struct {
	Inner   ConvictionPolicy[H]
	Refused func(host H) // a fill refused by the governor left the pool at host empty
}

// AddFailure implements the driver's ConvictionPolicy.
func (c GovernedConviction[H]) AddFailure(err error, host H) bool {
	if errors.Is(err, ErrGoverned) {
		if c.Refused != nil {
			c.Refused(host)
		}
		return false
	}
	return c.Inner.AddFailure(err, host)
}

// PoolEmptyAt returns a GovernedConviction.Refused that tells gate the pool at the host is empty.
func PoolEmptyAt[H Host](gate Gate) func(H) {
	return func(host H) {
		if addr, ok := HostAddr(host); ok {
			gate.PoolEmpty(addr)
		}
	}
}

// Reset implements the driver's ConvictionPolicy.
func (c GovernedConviction[H]) Reset(host H) { c.Inner.Reset(host) }

// PlainDialer dials as gocql's default host dialer does (v1.7.0 and v2.1.2 alike, connConfig in
// their connectionpool.go): the connect address and port with Dialer, then TLS with the server
// name taken from the host name and port, by the driver's own Wrap (gocql's WrapTLS; a nil TLS
// wraps nothing). An adapter governs it when the user configured no HostDialer of their own.
type PlainDialer[H Host, D any] struct {
	Dialer Dialer
	TLS    *tls.Config
	Wrap   func(ctx context.Context, conn net.Conn, addr string, tc *tls.Config) (D, error)
}

// DialHost implements the driver's HostDialer.
func (p *PlainDialer[H, D]) DialHost(ctx context.Context, host H) (D, error) {
	var zero D
	ip, port := host.ConnectAddress(), host.Port()
	if ip == nil || ip.IsUnspecified() {
		return zero, fmt.Errorf("host missing connect ip address: %v", ip)
	} else if port == 0 {
		return zero, fmt.Errorf("host missing port: %v", port)
	}
	conn, err := p.Dialer.DialContext(ctx, "tcp", host.ConnectAddressAndPort())
	if err != nil {
		return zero, err
	}
	return p.Wrap(ctx, conn, host.HostnameAndPort(), p.TLS)
}
