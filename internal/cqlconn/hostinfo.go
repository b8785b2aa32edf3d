package cqlconn

import (
	"fmt"
	"net"
	"reflect"
	"strconv"
	"sync"
	"unsafe"

	"github.com/gocql/gocql"
)

// HostInfoCache keeps the *gocql.HostInfo gocql itself built for each address, so that a
// user's HostDialer or AuthProvider gets from us what it gets from gocql: the hostname of a
// contact point given as a DNS name (a HostDialer that verifies TLS by hostname needs it), the
// port, the host ID. controlconn.New installs it as the gocql config's ConnectObserver, chained
// to the observer the user had: gocql reports every connection it makes with its HostInfo. Safe
// for concurrent use; ObserveConnect never blocks.
type HostInfoCache struct {
	next  gocql.ConnectObserver // the user's observer, called first; may be nil
	hosts sync.Map              // "ip:port" -> *gocql.HostInfo
}

// NewHostInfoCache returns an empty cache that passes every connection on to next (may be nil).
func NewHostInfoCache(next gocql.ConnectObserver) *HostInfoCache {
	return &HostInfoCache{next: next}
}

// WithHostInfos returns cfg whose HostDialer and AuthProvider get gocql's own HostInfos from
// cache, when gocql has connected to the address dialled.
func WithHostInfos(cfg ConnConfig, cache *HostInfoCache) ConnConfig {
	cfg.hostInfos = cache
	return cfg
}

// ObserveConnect implements gocql.ConnectObserver.
func (c *HostInfoCache) ObserveConnect(o gocql.ObservedConnect) {
	if c.next != nil {
		c.next.ObserveConnect(o)
	}
	if o.Host != nil {
		c.hosts.Store(o.Host.ConnectAddressAndPort(), o.Host)
	}
}

// Retain forgets the HostInfo of every address keep rejects ("ip:port"): hosts removed from
// the cluster and addresses hosts no longer have, so that the cache does not grow with address
// churn. An address gocql connects to again is cached again.
func (c *HostInfoCache) Retain(keep func(addr string) bool) {
	c.hosts.Range(func(k, _ any) bool {
		if !keep(k.(string)) {
			c.hosts.Delete(k)
		}
		return true
	})
}

// Len returns the number of addresses cached.
func (c *HostInfoCache) Len() int {
	n := 0
	c.hosts.Range(func(any, any) bool { n++; return true })
	return n
}

// lookup returns gocql's HostInfo for ep's address, nil if gocql has not connected to it
// (or c is nil).
func (c *HostInfoCache) lookup(ep Endpoint) *gocql.HostInfo {
	if c == nil {
		return nil
	}
	if h, ok := c.hosts.Load(ep.Addr); ok {
		return h.(*gocql.HostInfo)
	}
	return nil
}

// hostInfoFor is the *gocql.HostInfo for ep: gocql's own if it connected to that address,
// else one built by HostInfo.
func (c ConnConfig) hostInfoFor(ep Endpoint) (*gocql.HostInfo, error) {
	if h := c.hostInfos.lookup(ep); h != nil {
		return h, nil
	}
	return HostInfo(ep)
}

// HostInfo builds the *gocql.HostInfo a user's gocql.HostDialer expects, when gocql has none
// for the address (no session attached, or not connected there yet). gocql v1.7.0 exports no
// constructor and no port setter, yet every HostDialer dials host.ConnectAddressAndPort(), so
// the port is written into the unexported field; if a gocql upgrade renames that field the
// dial fails with a clear error rather than dialling port 0. Without gocql's HostInfo the
// hostname is the IP address.
func HostInfo(ep Endpoint) (*gocql.HostInfo, error) {
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
	return h, nil
}

func setHostInfoPort(h *gocql.HostInfo, port int) bool {
	f := reflect.ValueOf(h).Elem().FieldByName("port")
	if !f.IsValid() || f.Kind() != reflect.Int {
		return false
	}
	// h is fresh and not yet shared, so writing without its lock is safe.
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetInt(int64(port))
	return h.Port() == port
}
