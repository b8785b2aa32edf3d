package gocqlv2

// Regression this file catches (run against the code before the fix: it failed, the HostDialer
// and the AuthProvider got from us a HostInfo we built, without the host ID): a user's v2
// HostDialer or AuthProvider gets gocql v2's own HostInfo for our dials, as v1 users get v1's
// (controlconn's TestHostDialerGetsGocqlsHostInfoWithTheHostname). Note that gocql v2.1.2, unlike
// v1.7.0, resolves a contact point given as a DNS name into HostInfos whose hostname is the IP
// address: a v2 HostDialer verifying TLS by hostname sees the same hostname for our dials as for
// v2's own.

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
)

// recordingHosts is a v2 HostDialer (dialling plain TCP) and AuthProvider that records the
// HostInfo it is given each time, once reset has been called.
type recordingHosts struct {
	mu   sync.Mutex
	on   bool
	seen []*gocql.HostInfo
}

func (r *recordingHosts) record(h *gocql.HostInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.seen = append(r.seen, h)
	}
}

func (r *recordingHosts) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.seen = true, nil
}

func (r *recordingHosts) snapshot() []*gocql.HostInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*gocql.HostInfo(nil), r.seen...)
}

func (r *recordingHosts) DialHost(ctx context.Context, h *gocql.HostInfo) (*gocql.DialedHost, error) {
	r.record(h)
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", h.ConnectAddressAndPort())
	if err != nil {
		return nil, err
	}
	return &gocql.DialedHost{Conn: nc}, nil
}

// After a v2 session has connected, the control connection's dials hand the user's v2
// HostDialer and AuthProvider gocql v2's own HostInfo for the address (the same object v2 dials
// with, so its hostname is what v2 uses, for TLS verification by hostname too), with the host ID.
// The user's ConnectObserver is still called.
func TestV2HostDialerAndAuthProviderGetV2sHostInfo(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 1, BaseIP: "127.0.42.51", Username: "cassandra", Password: "secret"})
	cluster := v2Cluster(sim)
	dialer, auth := &recordingHosts{}, &recordingHosts{}
	cluster.HostDialer = dialer
	cluster.AuthProvider = func(h *gocql.HostInfo) (gocql.Authenticator, error) {
		auth.record(h)
		return gocql.PasswordAuthenticator{Username: "cassandra", Password: "secret"}, nil
	}
	var observed sync.Map // *gocql.HostInfo -> true: what the user's observer saw
	cluster.ConnectObserver = observerFunc(func(o gocql.ObservedConnect) { observed.Store(o.Host, true) })

	cc, err := New(cluster, core.Cadence{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cc.Close()) })
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	bounded.Close(t, "gocql v2 Session.Close", session.Close)
	require.NoError(t, session.Query("SELECT release_version FROM system.local").Exec(), "v2's pool is up")

	dialer.reset()
	auth.reset()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	_, err = cc.WaitConnected(ctx)
	require.NoError(t, err)
	id := cc.Snapshot().Hosts()[0].HostID()
	require.NotEmpty(t, id)
	for name, r := range map[string]*recordingHosts{"HostDialer": dialer, "AuthProvider": auth} {
		seen := r.snapshot()
		require.NotEmpty(t, seen, name)
		for _, h := range seen {
			_, v2s := observed.Load(h)
			assert.True(t, v2s, "%s got gocql v2's own HostInfo, not one built by us", name)
			assert.Equal(t, id, h.HostID(), "%s: host ID", name)
			assert.Equal(t, sim.Node(0).Addr(), h.ConnectAddressAndPort(), name)
		}
	}
}

type observerFunc func(gocql.ObservedConnect)

func (f observerFunc) ObserveConnect(o gocql.ObservedConnect) { f(o) }

// Without gocql v2's own HostInfo for the address (no session has connected there), the one built
// carries the address as hostname, the port, and the host ID we know.
func TestHostInfoWithoutV2sCarriesTheHostID(t *testing.T) {
	ep := adapter.Endpoint{Addr: "127.0.0.7:9042", HostID: "5d9e3c1a-0000-4000-8000-000000000007"}
	for _, hosts := range []*hostInfos{nil, {}} {
		h, err := hosts.hostInfo(ep)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.7", h.ConnectAddress().String())
		assert.Equal(t, "5d9e3c1a-0000-4000-8000-000000000007", h.HostID())
		assert.Equal(t, 9042, h.Port())
	}
}

// gocql v2's HostFilter decides the hosts ours dials (Driver.Accept), asked with a HostInfo that
// carries the endpoint's data center; no filter, no Accept. Checked to fail without the data
// center written (dc1 refused).
func TestTranslateAcceptIsTheHostFilter(t *testing.T) {
	d, err := translate(gocql.NewCluster("127.0.0.1"), nil)
	require.NoError(t, err)
	assert.Nil(t, d.Accept, "no HostFilter")

	cfg := gocql.NewCluster("127.0.0.1")
	cfg.HostFilter = gocql.DataCenterHostFilter("dc1")
	d, err = translate(cfg, &hostInfos{})
	require.NoError(t, err)
	require.NotNil(t, d.Accept)
	assert.True(t, d.Accept(adapter.Endpoint{Addr: "127.0.0.2:9042", HostID: "h2", DC: "dc1"}))
	assert.False(t, d.Accept(adapter.Endpoint{Addr: "127.0.0.3:9042", HostID: "h3", DC: "dc2"}))
}
