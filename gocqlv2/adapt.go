package gocqlv2

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	gocqlv1 "github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// The control connection takes gocql v1's types (internal/cqlconn.ConnConfig, through a gocql v1 ClusterConfig); these adapters present
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
func authProvider(p func(h *gocql.HostInfo) (gocql.Authenticator, error), hosts *hostInfos) func(*gocqlv1.HostInfo) (gocqlv1.Authenticator, error) {
	return func(h1 *gocqlv1.HostInfo) (gocqlv1.Authenticator, error) {
		h, err := hosts.hostInfo(h1)
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
type v1HostDialer struct {
	d     gocql.HostDialer
	hosts *hostInfos
}

// hostDialer adapts d; nil stays nil, so that the control connection dials with Dialer and TLS.
func hostDialer(d gocql.HostDialer, hosts *hostInfos) gocqlv1.HostDialer {
	if d == nil {
		return nil
	}
	return v1HostDialer{d, hosts}
}

func (x v1HostDialer) DialHost(ctx context.Context, h1 *gocqlv1.HostInfo) (*gocqlv1.DialedHost, error) {
	h, err := x.hosts.hostInfo(h1)
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

// hostInfos keeps the *gocql.HostInfo gocql v2 itself built for each address it connected to,
// so that the user's v2 HostDialer and AuthProvider get for our dials what they get for v2's: the
// same HostInfo, with the hostname v2 dials by (a HostDialer that verifies TLS by hostname needs
// it; gocql v2.1.2 names a host given as a DNS name by its IP address), the host ID. New chains it into cluster.ConnectObserver, after the observer the user
// had: gocql v2 reports every connection it makes with its HostInfo. The same as
// controlconn.New does for gocql v1. Safe for concurrent use; ObserveConnect never blocks. A nil
// *hostInfos caches nothing (translate, which does not modify the cluster).
type hostInfos struct {
	next  gocql.ConnectObserver // the user's observer, called first; may be nil
	hosts sync.Map              // "ip:port" -> *gocql.HostInfo
	gate  adapter.Gate          // governed: every setup's end goes to the governor (set by New before any session)
}

// ObserveConnect implements gocql.ConnectObserver.
func (c *hostInfos) ObserveConnect(o gocql.ObservedConnect) {
	if c.next != nil {
		c.next.ObserveConnect(o)
	}
	if o.Host != nil {
		c.hosts.Store(o.Host.ConnectAddressAndPort(), o.Host)
		if addr, ok := hostAddrPort(o.Host); ok && c.gate != nil {
			c.gate.SetupDone(addr, o.End.Sub(o.Start), o.Err)
		}
	}
}

// hostInfo is the v2 HostInfo of the host the control connection dials: gocql v2's own if it
// connected to that address; else one with its address and port, the host name being the
// address (as gocql v2's NewHostInfoFromAddrPort makes it), and the host ID we know.
func (c *hostInfos) hostInfo(h1 *gocqlv1.HostInfo) (*gocql.HostInfo, error) {
	if c != nil {
		if h, ok := c.hosts.Load(h1.ConnectAddressAndPort()); ok {
			return h.(*gocql.HostInfo), nil
		}
	}
	h, err := gocql.NewHostInfoFromAddrPort(h1.ConnectAddress(), h1.Port())
	if err != nil {
		return nil, err
	}
	if id := h1.HostID(); id != "" {
		setHostID(h, id)
	}
	return h, nil
}

// setHostID writes id into a fresh v2 HostInfo, which has no exported setter (v2.1.2). If a
// gocql upgrade renames the field, the HostInfo goes without its host ID, as before.
func setHostID(h *gocql.HostInfo, id string) {
	f := reflect.ValueOf(h).Elem().FieldByName("hostId")
	if !f.IsValid() || f.Kind() != reflect.String {
		return
	}
	// h is fresh and not yet shared, so writing without its lock is safe.
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetString(id)
}
