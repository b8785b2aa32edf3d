package adapter

import (
	"net"
	"net/netip"
	"time"
)

// What the gocql v1 and v2 adapters share about a driver's dials. Their dialers differ only in
// the driver's types (HostInfo, DialedHost, WrapTLS), so the rules live here once.

// AddrPort is the address a driver dials for a host whose connect address is ip and port is
// port, as the governor keys it (an IPv4-mapped IPv6 address unmapped), without allocating.
// ok is false for a missing or unspecified address or a port outside 1..65535: such a host is
// left to the driver's own dialer, which reports it its own way.
func AddrPort(ip net.IP, port int) (ap netip.AddrPort, ok bool) {
	a, ok := netip.AddrFromSlice(ip)
	a = a.Unmap()
	if !ok || a.IsUnspecified() || port <= 0 || port > 65535 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, uint16(port)), true
}

// ReconnectInterval is the reconnect interval a governed driver gets: GovernedReconnectInterval
// when configured is the driver's own default (driverDefault: 60 s in gocql v1.7.0 and v2.1.2),
// else configured, untouched (a user who wants exactly the default sets it plus 1 ns).
func ReconnectInterval(configured, driverDefault time.Duration) time.Duration {
	if configured == driverDefault {
		return GovernedReconnectInterval
	}
	return configured
}

// NetDialer is the dialer gocql v1.7.0 and v2.1.2 build when the config sets neither HostDialer
// nor Dialer: ConnectTimeout as its timeout and, when positive, SocketKeepalive.
func NetDialer(connectTimeout, keepalive time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: connectTimeout}
	if keepalive > 0 {
		d.KeepAlive = keepalive
	}
	return d
}
