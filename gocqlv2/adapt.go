package gocqlv2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// The control connection takes the driver-neutral types of controlconn/adapter; these present
// the user's v2 authenticator and host dialer through them. They hold no state of their own and
// are called from the control connection's attempt goroutines.

// authFor is the Driver's Auth for cluster: its AuthProvider, which gets gocql v2's HostInfo
// from hosts, else its Authenticator; nil with neither.
func authFor(cluster *gocql.ClusterConfig, hosts *hostInfos) func(adapter.Endpoint) (adapter.Authenticator, error) {
	return adapter.Auth(cluster.Authenticator, cluster.AuthProvider, hosts.hostInfo)
}

// dialHost is the Driver's DialHost for the user's v2 HostDialer, which also sets up TLS if
// any, and gets gocql v2's HostInfo from hosts.
func dialHost(d gocql.HostDialer, hosts *hostInfos) func(context.Context, adapter.Endpoint) (net.Conn, error) {
	return adapter.DialHost[*gocql.HostInfo, *gocql.DialedHost](d, hosts.hostInfo, dialedConn)
}

// dialedConn is the connection of what a HostDialer returned; nil if none.
func dialedConn(dh *gocql.DialedHost) net.Conn {
	if dh == nil {
		return nil
	}
	return dh.Conn
}

// hostInfos keeps the *gocql.HostInfo gocql v2 itself built for each address it connected to,
// so that the user's v2 HostDialer and AuthProvider get for our dials what they get for v2's: the
// same HostInfo, with the hostname v2 dials by (a HostDialer that verifies TLS by hostname needs
// it; gocql v2.1.2 names a host given as a DNS name by its IP address), the host ID. New chains it into cluster.ConnectObserver, after the observer the user
// had: gocql v2 reports every connection it makes with its HostInfo. The same as
// controlconn.New does for gocql v1. Safe for concurrent use; ObserveConnect never blocks. A nil
// *hostInfos caches nothing (translate, which does not modify the cluster).
type hostInfos struct {
	adapter.HostCache[*gocql.HostInfo]
	next gocql.ConnectObserver // the user's observer, called first; may be nil
	gate adapter.Gate          // governed: every setup's end goes to the governor (set by New before any session)
}

// ObserveConnect implements gocql.ConnectObserver.
func (c *hostInfos) ObserveConnect(o gocql.ObservedConnect) {
	if c.next != nil {
		c.next.ObserveConnect(o)
	}
	if o.Host != nil {
		c.Put(o.Host.ConnectAddressAndPort(), o.Host)
		if addr, ok := adapter.HostAddr(o.Host); ok && c.gate != nil {
			c.gate.SetupDone(addr, o.End.Sub(o.Start), o.Err)
		}
	}
}

// hostInfo is the v2 HostInfo of the host the control connection dials: gocql v2's own if it
// connected to that address; else one with its address and port, the host name being the
// address (as gocql v2's NewHostInfoFromAddrPort makes it), and the host ID we know.
func (c *hostInfos) hostInfo(ep adapter.Endpoint) (*gocql.HostInfo, error) {
	if c != nil {
		if h, ok := c.Get(ep.Addr); ok {
			return h, nil
		}
	}
	ap, err := netip.ParseAddrPort(ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", ep.Addr, err)
	}
	h, err := gocql.NewHostInfoFromAddrPort(net.IP(ap.Addr().Unmap().AsSlice()), int(ap.Port()))
	if err != nil {
		return nil, err
	}
	if ep.HostID != "" {
		setField(h, "hostId", ep.HostID)
	}
	if ep.DC != "" {
		setField(h, "dataCenter", ep.DC) // for a DataCenterHostFilter
	}
	return h, nil
}

// setField writes v into the string field name of a fresh v2 HostInfo, which has no exported
// setters (v2.1.2). If a gocql upgrade renames the field, the HostInfo goes without it.
func setField(h *gocql.HostInfo, name, v string) {
	f := reflect.ValueOf(h).Elem().FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.String {
		return
	}
	// h is fresh and not yet shared, so writing without its lock is safe.
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetString(v)
}
