package plan

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// Resolver looks up the IP addresses of a host name (net.DefaultResolver.LookupIP by default).
type Resolver func(ctx context.Context, host string) ([]net.IP, error)

func defaultResolver(ctx context.Context, host string) ([]net.IP, error) {
	return net.DefaultResolver.LookupIP(ctx, "ip", host)
}

// ResolveContactPoints turns contact points ("host" or "host:port", as in
// gocql.ClusterConfig.Hosts) into endpoints, looking names up again every time: pods come back
// with new IPs. As gocql does, IPv4 addresses are preferred when a name has any. Names that do
// not resolve are skipped; the error of the last failure is returned with what did resolve.
func ResolveContactPoints(ctx context.Context, hosts []string, port int, resolve Resolver) ([]cqlconn.Endpoint, error) {
	if resolve == nil {
		resolve = defaultResolver
	}
	var out []cqlconn.Endpoint
	var lastErr error
	for _, h := range hosts {
		host, p := strings.TrimSpace(h), port
		if hh, ps, err := net.SplitHostPort(host); err == nil {
			n, err := strconv.Atoi(ps)
			if err != nil {
				lastErr = err
				continue
			}
			host, p = hh, n
		}
		if ip := net.ParseIP(host); ip != nil {
			out = append(out, cqlconn.Endpoint{Addr: net.JoinHostPort(ip.String(), strconv.Itoa(p))})
			continue
		}
		ips, err := resolve(ctx, host)
		if err != nil {
			lastErr = err
			continue
		}
		var v4 []net.IP
		for _, ip := range ips {
			if ip4 := ip.To4(); ip4 != nil {
				v4 = append(v4, ip4)
			}
		}
		if len(v4) > 0 {
			ips = v4
		}
		for _, ip := range ips {
			out = append(out, cqlconn.Endpoint{Addr: net.JoinHostPort(ip.String(), strconv.Itoa(p)), Hostname: host})
		}
	}
	return out, lastErr
}
