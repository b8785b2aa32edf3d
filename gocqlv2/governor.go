package gocqlv2

import (
	"crypto/tls"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// v2DefaultReconnectInterval is gocql v2's NewCluster ReconnectInterval.
const v2DefaultReconnectInterval = 60 * time.Second

// governV2 puts the governor gate into cluster (New, after the ControlConnection is built): the
// HostDialer becomes a governed one around what the user configured (inner), and gocql v2's
// default reconnect tick becomes 100 ms (adapter.GovernedReconnectInterval), as controlconn.New does
// for gocql v1.
func governV2(cluster *gocql.ClusterConfig, gate adapter.Gate, inner gocql.HostDialer) {
	cluster.HostDialer = &adapter.GovernedDialer[*gocql.HostInfo, *gocql.DialedHost]{Gate: gate, Inner: inner}
	gate.SetReconnectInterval(cluster.ReconnectInterval)
	conviction := cluster.ConvictionPolicy
	if conviction == nil {
		conviction = &gocql.SimpleConvictionPolicy{}
	}
	cluster.ConvictionPolicy = &adapter.GovernedConviction[*gocql.HostInfo]{Inner: conviction, Refused: adapter.PoolEmptyAt[*gocql.HostInfo](gate)}
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
	var d adapter.Dialer = cluster.Dialer
	if cluster.Dialer == nil {
		d = adapter.NetDialer(cluster.ConnectTimeout, cluster.SocketKeepalive)
	}
	p := &adapter.PlainDialer[*gocql.HostInfo, *gocql.DialedHost]{Dialer: d, Wrap: gocql.WrapTLS}
	if tc != nil {
		p.TLS = tc.Clone()
	}
	return p
}

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
		if f.Name == "err" && strings.Contains(f.Value.String(), adapter.ErrGoverned.Error()) {
			return true
		}
	}
	return false
}
