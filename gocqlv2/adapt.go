package gocqlv2

import (
	"context"
	"errors"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	gocqlv1 "github.com/gocql/gocql"
)

// The control connection takes gocql v1's types (controlconn.ConnConfig); these adapters present
// the user's v2 authenticator and dialers through them. They hold no state of their own and are
// called from the control connection's attempt goroutines.

// authenticator answers the server's SASL exchange with a v2 Authenticator. The two interfaces
// differ only in the type of the next authenticator Challenge returns.
type authenticator struct{ a gocql.Authenticator }

func (x authenticator) Challenge(req []byte) ([]byte, gocqlv1.Authenticator, error) {
	resp, next, err := x.a.Challenge(req)
	if next == nil {
		return resp, nil, err // a nil interface, not an adapter of nil: "no further challenge"
	}
	return resp, authenticator{next}, err
}

func (x authenticator) Success(data []byte) error { return x.a.Success(data) }

// authProvider makes the Authenticator per host with the user's v2 AuthProvider.
func authProvider(p func(h *gocql.HostInfo) (gocql.Authenticator, error)) func(*gocqlv1.HostInfo) (gocqlv1.Authenticator, error) {
	return func(h1 *gocqlv1.HostInfo) (gocqlv1.Authenticator, error) {
		h, err := hostInfo(h1)
		if err != nil {
			return nil, err
		}
		a, err := p(h)
		if err != nil || a == nil {
			return nil, err
		}
		return authenticator{a}, nil
	}
}

// v1HostDialer dials with the user's v2 HostDialer, which also sets up TLS if any.
type v1HostDialer struct{ d gocql.HostDialer }

// hostDialer adapts d; nil stays nil, so that the control connection dials with Dialer and TLS.
func hostDialer(d gocql.HostDialer) gocqlv1.HostDialer {
	if d == nil {
		return nil
	}
	return v1HostDialer{d}
}

func (x v1HostDialer) DialHost(ctx context.Context, h1 *gocqlv1.HostInfo) (*gocqlv1.DialedHost, error) {
	h, err := hostInfo(h1)
	if err != nil {
		return nil, err
	}
	dh, err := x.d.DialHost(ctx, h)
	if err != nil {
		return nil, err
	}
	if dh == nil || dh.Conn == nil {
		return nil, errors.New("gocqlv2: HostDialer returned no connection")
	}
	return &gocqlv1.DialedHost{Conn: dh.Conn, DisableCoalesce: dh.DisableCoalesce}, nil
}

// hostInfo is the v2 HostInfo of the host the control connection dials: its address and port,
// the host name being the address, as gocql v2's NewHostInfoFromAddrPort makes it. A host ID
// cannot be set on a v2 HostInfo from outside gocql.
func hostInfo(h *gocqlv1.HostInfo) (*gocql.HostInfo, error) {
	return gocql.NewHostInfoFromAddrPort(h.ConnectAddress(), h.Port())
}
