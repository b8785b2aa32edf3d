// Package gocqlv1 translates gocql v1.7.0's authenticators, host dialers and HostInfos into the
// driver-neutral connection settings of internal/cqlconn. controlconn.New uses it; nothing a
// gocql v2 program builds imports it.
package gocqlv1

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// HostInfoCache keeps the *gocql.HostInfo gocql itself built for each address, so that a
// user's HostDialer or AuthProvider gets from us what it gets from gocql: the hostname of a
// contact point given as a DNS name (a HostDialer that verifies TLS by hostname needs it), the
// port, the host ID. controlconn.New installs it as the gocql config's ConnectObserver, chained
// to the observer the user had: gocql reports every connection it makes with its HostInfo. Safe
// for concurrent use; ObserveConnect never blocks. A nil *HostInfoCache caches nothing.
type HostInfoCache struct {
	adapter.HostCache[*gocql.HostInfo]
	next gocql.ConnectObserver // the user's observer, called first; may be nil
}

// NewHostInfoCache returns an empty cache that passes every connection on to next (may be nil).
func NewHostInfoCache(next gocql.ConnectObserver) *HostInfoCache {
	return &HostInfoCache{next: next}
}

// ObserveConnect implements gocql.ConnectObserver.
func (c *HostInfoCache) ObserveConnect(o gocql.ObservedConnect) {
	if c.next != nil {
		c.next.ObserveConnect(o)
	}
	if o.Host != nil {
		c.Put(o.Host.ConnectAddressAndPort(), o.Host)
	}
}

// For is the *gocql.HostInfo for ep: gocql's own if it connected to that address, else one
// built by HostInfo.
func (c *HostInfoCache) For(ep cqlconn.Endpoint) (*gocql.HostInfo, error) {
	if c != nil {
		if h, ok := c.Get(ep.Addr); ok {
			return h, nil
		}
	}
	return HostInfo(ep)
}

// HostInfo builds the *gocql.HostInfo a user's gocql.HostDialer expects, when gocql has none
// for the address (no session attached, or not connected there yet). gocql v1.7.0 exports no
// constructor and no port setter, yet every HostDialer dials host.ConnectAddressAndPort(), so
// the port is written into the unexported field; if a gocql upgrade renames that field the
// dial fails with a clear error rather than dialling port 0. Without gocql's HostInfo the
// hostname is the IP address.
func HostInfo(ep cqlconn.Endpoint) (*gocql.HostInfo, error) {
	host, portStr, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("endpoint %q is not an IP address", ep.Addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: bad port: %w", ep.Addr, err)
	}
	h := (&gocql.HostInfo{}).SetConnectAddress(ip)
	if ep.HostID != "" {
		h.SetHostID(ep.HostID)
	}
	if !setHostInfoPort(h, port) {
		return nil, fmt.Errorf("cannot set the port of a gocql.HostInfo with this gocql version")
	}
	if ep.DC != "" {
		setHostInfoDC(h, ep.DC)
	}
	return h, nil
}

func setHostInfoPort(h *gocql.HostInfo, port int) bool {
	if f, ok := hostInfoField(h, "port", reflect.Int); ok {
		f.SetInt(int64(port))
	}
	return h.Port() == port
}

// setHostInfoDC writes dc into a fresh HostInfo (no exported setter in v1.7.0), for a
// DataCentreHostFilter; if a gocql upgrade renames the field, the HostInfo goes without it.
func setHostInfoDC(h *gocql.HostInfo, dc string) {
	if f, ok := hostInfoField(h, "dataCenter", reflect.String); ok {
		f.SetString(dc)
	}
}

// hostInfoField is the settable unexported field name of h, if it has that kind. h must be
// fresh and not yet shared, so that writing without its lock is safe.
func hostInfoField(h *gocql.HostInfo, name string, kind reflect.Kind) (reflect.Value, bool) {
	f := reflect.ValueOf(h).Elem().FieldByName(name)
	if !f.IsValid() || f.Kind() != kind {
		return reflect.Value{}, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
}

// Auth is cqlconn.ConnConfig.Auth for gocql's AuthProvider, which gets the host's HostInfo from
// hosts, else its Authenticator; nil when both are nil.
func Auth(a gocql.Authenticator, p func(*gocql.HostInfo) (gocql.Authenticator, error), hosts *HostInfoCache) func(cqlconn.Endpoint) (cqlconn.Authenticator, error) {
	return adapter.Auth(a, p, hosts.For)
}

// DialHost is cqlconn.ConnConfig.DialHost for a gocql HostDialer, which gets the host's
// HostInfo from hosts; nil when d is nil.
func DialHost(d gocql.HostDialer, hosts *HostInfoCache) func(context.Context, cqlconn.Endpoint) (net.Conn, error) {
	if d == nil {
		return nil
	}
	return adapter.DialHost[*gocql.HostInfo, *gocql.DialedHost](d, hosts.For, dialedConn)
}

// dialedConn is the connection of what a HostDialer returned; nil if none.
func dialedConn(dh *gocql.DialedHost) net.Conn {
	if dh == nil {
		return nil
	}
	return dh.Conn
}
