package core

// Regression this test catches (run against the code before the fix: it failed, the dialer
// saw the IP address as hostname): with a contact point given as a DNS name, a user's
// HostDialer that checks the hostname (as one verifying TLS by hostname does) got from us a
// HostInfo without it. Now it gets gocql's own. The fallback, a HostInfo built with the port
// written by reflection, is covered by internal/gocqlv1's TestDialHostGetsAHostInfoWithAddressPortAndID.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
)

// hostnameDialer refuses hosts whose hostname is not want, as a TLS dialer verifying the
// server's certificate against the hostname would fail them.
type hostnameDialer struct {
	want string
	mu   sync.Mutex
	seen []string
}

func (d *hostnameDialer) DialHost(ctx context.Context, h *gocql.HostInfo) (*gocql.DialedHost, error) {
	hostname, _, _ := net.SplitHostPort(h.HostnameAndPort())
	d.mu.Lock()
	d.seen = append(d.seen, hostname)
	d.mu.Unlock()
	if hostname != d.want {
		return nil, fmt.Errorf("certificate is valid for %s, not %s", d.want, hostname)
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", h.ConnectAddressAndPort())
	if err != nil {
		return nil, err
	}
	return &gocql.DialedHost{Conn: nc}, nil
}

func TestHostDialerGetsGocqlsHostInfoWithTheHostname(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 1, ReleaseVersion: "3.11.17"})
	cluster := gocql.NewCluster("localhost")
	cluster.Port = sim.Port()
	cluster.DisableInitialHostLookup = true
	cluster.ConnectTimeout, cluster.Timeout = 2*time.Second, 2*time.Second
	d := &hostnameDialer{want: "localhost"}
	cluster.HostDialer = d
	cc, err := newGocql(cluster, Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	session, err := cluster.CreateSession()
	require.NoError(t, err, "gocql itself dials with the hostname")
	defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	d.mu.Lock()
	defer d.mu.Unlock()
	assert.NotContains(t, d.seen, "127.0.0.1", "we never offered the dialer a HostInfo without the hostname")
}

// hostInfo builds the *gocql.HostInfo a HostDialer gets for ep when gocql has none.
func hostInfo(ep Endpoint) (*gocql.HostInfo, error) { return gocqlv1.HostInfo(ep) }
