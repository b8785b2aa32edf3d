package gocqlv2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// v2DefaultReconnectInterval is gocql v2's NewCluster ReconnectInterval.
const v2DefaultReconnectInterval = 60 * time.Second

// governV2 puts the governor gate into cluster (New, after the ControlConnection is built): the
// HostDialer becomes a governed one around what the user configured (inner), and gocql v2's
// default reconnect tick becomes 100 ms (adapter.GovernedReconnectInterval), as controlconn.New does
// for gocql v1.
func governV2(cluster *gocql.ClusterConfig, gate adapter.Gate, inner gocql.HostDialer) {
	cluster.HostDialer = &governedDialer{gate: gate, inner: inner}
	gate.SetReconnectInterval(cluster.ReconnectInterval)
	conviction := cluster.ConvictionPolicy
	if conviction == nil {
		conviction = &gocql.SimpleConvictionPolicy{}
	}
	cluster.ConvictionPolicy = &governedConviction{inner: conviction}
	if cluster.Logger != nil {
		cluster.Logger = refusalLogger{cluster.Logger}
	}
	cluster.ReconnectInterval = adapter.ReconnectInterval(cluster.ReconnectInterval, v2DefaultReconnectInterval)
	if hi, ok := cluster.ConnectObserver.(*hostInfos); ok {
		hi.gate = gate // the return: each setup's time and outcome (adapter.Gate.SetupDone)
	}
	if cluster.ConnectTimeout == adapter.DriverDefaultConnectTimeout {
		cluster.ConnectTimeout = adapter.GovernedConnectTimeout // STARTUP and login; the TCP connect keeps inner's
	}
}

// v2HostDialer is the HostDialer gocql v2.1.2 builds for cluster (connConfig in its
// connectionpool.go): cluster.HostDialer if set; otherwise cluster.Dialer, or a net.Dialer with
// ConnectTimeout and, when positive, SocketKeepalive; then TLS per SslOpts. tc is the config
// translate derived from SslOpts by gocql v2's rules (nil without SslOpts or with a
// HostDialer); the dialer gets a clone of it, as gocql v2 clones the user's.
func v2HostDialer(cluster *gocql.ClusterConfig, tc *tls.Config) gocql.HostDialer {
	if cluster.HostDialer != nil {
		return cluster.HostDialer
	}
	d := cluster.Dialer
	if d == nil {
		d = adapter.NetDialer(cluster.ConnectTimeout, cluster.SocketKeepalive)
	}
	p := &plainDialer{dialer: d}
	if tc != nil {
		p.tlsConfig = tc.Clone()
	}
	return p
}

// plainDialer dials as gocql v2.1.2's default host dialer does: the connect address and port,
// then TLS (gocql.WrapTLS) with the server name taken from the host name and port.
type plainDialer struct {
	dialer    gocql.Dialer
	tlsConfig *tls.Config
}

// DialHost implements gocql.HostDialer.
func (p *plainDialer) DialHost(ctx context.Context, host *gocql.HostInfo) (*gocql.DialedHost, error) {
	ip, port := host.ConnectAddress(), host.Port()
	if ip == nil || ip.IsUnspecified() {
		return nil, fmt.Errorf("host missing connect ip address: %v", ip)
	} else if port == 0 {
		return nil, fmt.Errorf("host missing port: %v", port)
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", host.ConnectAddressAndPort())
	if err != nil {
		return nil, err
	}
	return gocql.WrapTLS(ctx, conn, host.HostnameAndPort(), p.tlsConfig)
}

// governedDialer is the gocql v2 HostDialer New installs with controlconn.WithDialGovernor:
// every dial of the sessions created from the config, control connection and pools, asks the
// governor first (see controlconn.Governor). A refused dial fails at once with an error
// wrapping controlconn.ErrGoverned and sends nothing.
type governedDialer struct {
	gate  adapter.Gate
	inner gocql.HostDialer
}

// DialHost implements gocql.HostDialer.
func (d *governedDialer) DialHost(ctx context.Context, host *gocql.HostInfo) (*gocql.DialedHost, error) {
	addr, ok := hostAddrPort(host)
	if !ok {
		return d.inner.DialHost(ctx, host) // the inner dialer reports a bad address its own way
	}
	first, err := d.gate.Admit(ctx, addr)
	if err != nil {
		return nil, err
	}
	dh, err := d.inner.DialHost(ctx, host)
	d.gate.Done(ctx, addr, first, err)
	return dh, err
}

// governedConviction is the gocql v2 ConvictionPolicy New installs with the governor, around
// the one configured: a refused dial sent nothing and says nothing about the host, so it never
// convicts (gocql would mark the host down and tell every listener, on every refused fill);
// every other failure is the configured policy's to judge. No lock, no allocation.
type governedConviction struct{ inner gocql.ConvictionPolicy }

// AddFailure implements gocql.ConvictionPolicy.
func (c governedConviction) AddFailure(err error, host *gocql.HostInfo) bool {
	if errors.Is(err, controlconn.ErrGoverned) {
		return false
	}
	return c.inner.AddFailure(err, host)
}

// Reset implements gocql.ConvictionPolicy.
func (c governedConviction) Reset(host *gocql.HostInfo) { c.inner.Reset(host) }

// refusalLogger is the user's gocql v2 logger, which governV2 wraps so that a refused dial logs
// once, not twice. gocql v2.1.2's pool fill logs a failed dial twice: "Pool unable to establish a
// connection to host." (Debug: v2's level for refused connections, "typical during a node
// outage") and then "Connection pool filling failed." (Warning) with the same error. For a dial
// the governor refused (nothing sent; counted in GovernorStats), the Warning is dropped and the
// Debug line stays; every other line, and that Warning for any other error, goes through.
type refusalLogger struct{ gocql.StructuredLogger }

// fillFailed is gocql v2.1.2's message for a pool fill that failed.
const fillFailed = "Connection pool filling failed."

// Warning implements gocql.StructuredLogger.
func (l refusalLogger) Warning(msg string, fields ...gocql.LogField) {
	if msg == fillFailed && refusedField(fields) {
		return
	}
	l.StructuredLogger.Warning(msg, fields...)
}

// refusedField reports whether the err field of a log line is a refused dial's error.
func refusedField(fields []gocql.LogField) bool {
	for _, f := range fields {
		if f.Name == "err" && strings.Contains(f.Value.String(), controlconn.ErrGoverned.Error()) {
			return true
		}
	}
	return false
}

// hostAddrPort is the address gocql v2 dials for host (adapter.AddrPort), without allocating.
func hostAddrPort(host *gocql.HostInfo) (netip.AddrPort, bool) {
	return adapter.AddrPort(host.ConnectAddress(), host.Port())
}
