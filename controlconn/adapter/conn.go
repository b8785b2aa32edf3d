package adapter

import (
	"context"
	"errors"
	"net"
	"sync"
)

// Endpoint is one dialable address of a node: Addr "ip:port", HostID ("" for a contact point
// not yet identified), Hostname (the DNS name the address was resolved from, the TLS server
// name; "" for an IP) and DC ("" when unknown).
type Endpoint struct {
	Addr     string // "ip:port"
	HostID   string // node host ID; "" for a contact point not yet identified
	Hostname string // DNS name the address was resolved from (TLS server name); "" for an IP
	DC       string // data center, "" when unknown
}

func (e Endpoint) String() string {
	if e.HostID != "" {
		return e.Addr + "/" + e.HostID
	}
	return e.Addr
}

// Authenticator answers the server's SASL exchange (AUTHENTICATE, then any AUTH_CHALLENGE): a
// driver's authenticator, presented by its adapter. Challenge gets the authenticator's class
// name first, then each challenge's token; it returns the response and the authenticator of the
// next step (nil: no further challenge is expected). Success gets the token of AUTH_SUCCESS.
type Authenticator interface {
	Challenge(req []byte) (resp []byte, next Authenticator, err error)
	Success(data []byte) error
}

// Dialer opens a TCP connection: a net.Dialer, or a driver's dialer (gocql's Dialer, v1 and
// v2, has this one method).
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// AddressTranslator maps an address read from the system tables to the address dialled
// (gocql's AddressTranslator, v1 and v2, has this one method).
type AddressTranslator interface {
	Translate(addr net.IP, port int) (net.IP, int)
}

// The errors adapters match or wrap; controlconn exports the same values.
var (
	// ErrConfigChanged is wrapped by each of the warnings Start gives (and Status.ConfigChanged
	// keeps) when something New installed on the driver's configuration was replaced after New.
	ErrConfigChanged = errors.New("controlconn: ClusterConfig changed after New")
	// ErrGoverned is wrapped by the error of every dial the governor refused. Nothing was sent
	// to the host: no SYN, no handshake.
	ErrGoverned = errors.New("controlconn: dial refused by the dial governor (nothing sent)")
)

// HostCache keeps the driver's own host record (H: gocql's *HostInfo) for each address the
// driver connected to ("ip:port"), so that the user's host dialer and authenticator get for our
// dials what they get for the driver's: the hostname a contact point was given by, the port,
// the host ID. An adapter fills it from the driver's connect observer and prunes it with
// Driver.Retain. Safe for concurrent use; it never blocks. The zero value is empty; a nil
// *HostCache holds nothing.
type HostCache[H any] struct{ hosts sync.Map }

// Put records h as the driver's record of addr.
func (c *HostCache[H]) Put(addr string, h H) { c.hosts.Store(addr, h) }

// Get returns the driver's record of addr, if it connected there.
func (c *HostCache[H]) Get(addr string) (h H, ok bool) {
	if c == nil {
		return h, false
	}
	v, ok := c.hosts.Load(addr)
	if !ok {
		return h, false
	}
	return v.(H), true
}

// Retain forgets the record of every address keep rejects: hosts removed from the cluster and
// addresses hosts no longer have, so that the cache does not grow with address churn. An
// address the driver connects to again is cached again.
func (c *HostCache[H]) Retain(keep func(addr string) bool) {
	c.hosts.Range(func(k, _ any) bool {
		if !keep(k.(string)) {
			c.hosts.Delete(k)
		}
		return true
	})
}

// Len returns the number of addresses cached.
func (c *HostCache[H]) Len() int {
	n := 0
	c.hosts.Range(func(any, any) bool { n++; return true })
	return n
}

// DriverAuthenticator is a driver's authenticator, whose next step is of its own type A
// (gocql v1's and v2's Authenticator).
type DriverAuthenticator[A any] interface {
	Challenge(req []byte) (resp []byte, next A, err error)
	Success(data []byte) error
}

// AuthenticatorOf presents a driver's authenticator as an Authenticator, at every step.
type AuthenticatorOf[A DriverAuthenticator[A]] struct{ A A }

// Challenge implements Authenticator.
func (x AuthenticatorOf[A]) Challenge(req []byte) ([]byte, Authenticator, error) {
	resp, next, err := x.A.Challenge(req)
	if any(next) == nil {
		return resp, nil, err // a nil interface, not an adapter of nil: "no further challenge"
	}
	return resp, AuthenticatorOf[A]{next}, err
}

// Success implements Authenticator.
func (x AuthenticatorOf[A]) Success(data []byte) error { return x.A.Success(data) }

// HostFilter is Driver.Accept for a driver's host filter, asked with the driver's record of
// the host (H) that host returns for the endpoint; an endpoint with no record is accepted (a
// filter never keeps the control connection from a host for want of a record). Nil when
// accept is nil.
func HostFilter[H any](accept func(H) bool, host func(Endpoint) (H, error)) func(Endpoint) bool {
	if accept == nil {
		return nil
	}
	return func(ep Endpoint) bool {
		h, err := host(ep)
		return err != nil || accept(h)
	}
}

// Auth is Driver.Auth for a driver's authenticator provider, which gets the driver's record of
// the host (H) that host returns for the endpoint, else for its authenticator; nil with
// neither (gocql, v1 and v2, uses the provider when both are set).
func Auth[H any, A DriverAuthenticator[A]](a A, provider func(H) (A, error), host func(Endpoint) (H, error)) func(Endpoint) (Authenticator, error) {
	switch {
	case provider != nil:
		return func(ep Endpoint) (Authenticator, error) {
			h, err := host(ep)
			if err != nil {
				return nil, err
			}
			a, err := provider(h)
			if err != nil || any(a) == nil {
				return nil, err
			}
			return AuthenticatorOf[A]{a}, nil
		}
	case any(a) != nil:
		x := AuthenticatorOf[A]{a}
		return func(Endpoint) (Authenticator, error) { return x, nil }
	}
	return nil
}

// DialHost is Driver.DialHost for the user's host dialer d, which gets the driver's record of
// the host that host returns for the endpoint; conn is the connection of what d returned (nil
// if none: an error).
func DialHost[H Host, D any](d HostDialer[H, D], host func(Endpoint) (H, error), conn func(D) net.Conn) func(context.Context, Endpoint) (net.Conn, error) {
	return func(ctx context.Context, ep Endpoint) (net.Conn, error) {
		h, err := host(ep)
		if err != nil {
			return nil, err
		}
		dh, err := d.DialHost(ctx, h)
		if err != nil {
			return nil, err
		}
		if c := conn(dh); c != nil {
			return c, nil
		}
		return nil, errors.New("the HostDialer returned no connection")
	}
}
