package gocqlv1

import (
	"context"
	"net"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
)

type recordingHostDialer struct {
	hosts []*gocql.HostInfo
}

func (d *recordingHostDialer) DialHost(ctx context.Context, h *gocql.HostInfo) (*gocql.DialedHost, error) {
	d.hosts = append(d.hosts, h)
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", h.ConnectAddressAndPort())
	if err != nil {
		return nil, err
	}
	return &gocql.DialedHost{Conn: nc}, nil
}

// Without gocql's own HostInfo for the address, a user's HostDialer gets one built from the
// endpoint, with the port written by reflection (gocql v1.7.0 has no setter) and the host ID.
func TestDialHostGetsAHostInfoWithAddressPortAndID(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	addr := simtest.Listen(t, node)
	hd := &recordingHostDialer{}
	c, err := cqlconn.Dial(context.Background(), cqlconn.Endpoint{Addr: addr, HostID: "h1"},
		cqlconn.ConnConfig{DialHost: DialHost(hd, nil)})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	require.Len(t, hd.hosts, 1)
	assert.Equal(t, addr, hd.hosts[0].ConnectAddressAndPort())
	assert.Equal(t, "h1", hd.hosts[0].HostID())
}

// gocql's PasswordAuthenticator logs in through the adapter, and a wrong password is an
// authentication error; AuthProvider wins over Authenticator and gets the host's HostInfo.
func TestAuthAdaptsGocqlsAuthenticators(t *testing.T) {
	cfg := simtest.MemConfig(1)
	cfg.Username, cfg.Password = "cassandra", "secret"
	_, node := simtest.ServerNode(t, cfg)
	addr := simtest.Listen(t, node)
	dial := func(auth func(cqlconn.Endpoint) (cqlconn.Authenticator, error)) error {
		c, err := cqlconn.Dial(context.Background(), cqlconn.Endpoint{Addr: addr}, cqlconn.ConnConfig{Auth: auth})
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	require.NoError(t, dial(Auth(gocql.PasswordAuthenticator{Username: "cassandra", Password: "secret"}, nil, nil)))
	err := dial(Auth(gocql.PasswordAuthenticator{Username: "cassandra", Password: "wrong"}, nil, nil))
	assert.Equal(t, cqlconn.ClassAuth, cqlconn.Classify(err), "%v", err)

	var got []string
	provider := func(h *gocql.HostInfo) (gocql.Authenticator, error) {
		got = append(got, h.ConnectAddressAndPort())
		return gocql.PasswordAuthenticator{Username: "cassandra", Password: "secret"}, nil
	}
	require.NoError(t, dial(Auth(gocql.PasswordAuthenticator{Password: "wrong"}, provider, nil)))
	assert.Equal(t, []string{addr}, got)
	assert.Nil(t, Auth(nil, nil, nil), "no authenticator: nil, so that a login the server asks for fails")
}

// The driver's HostFilter decides the hosts ours dials (Driver.Accept): asked with a HostInfo
// that carries the endpoint's data center (written by reflection, as the port), so a
// DataCentreHostFilter accepts its own data center's hosts before gocql has connected to them;
// no filter, no Accept. Checked to fail without the data center written (dc1 refused).
func TestDriverAcceptIsTheHostFilter(t *testing.T) {
	d, _, err := NewDriver(gocql.NewCluster("127.0.0.1"))
	require.NoError(t, err)
	assert.Nil(t, d.Accept, "no HostFilter")

	cfg := gocql.NewCluster("127.0.0.1")
	cfg.HostFilter = gocql.DataCentreHostFilter("dc1")
	d, _, err = NewDriver(cfg)
	require.NoError(t, err)
	require.NotNil(t, d.Accept)
	assert.True(t, d.Accept(cqlconn.Endpoint{Addr: "127.0.0.2:9042", HostID: "h2", DC: "dc1"}))
	assert.False(t, d.Accept(cqlconn.Endpoint{Addr: "127.0.0.3:9042", HostID: "h3", DC: "dc2"}))

	cfg.HostFilter = gocql.WhiteListHostFilter("127.0.0.2")
	d, _, err = NewDriver(cfg)
	require.NoError(t, err)
	assert.True(t, d.Accept(cqlconn.Endpoint{Addr: "127.0.0.2:9042"}))
	assert.False(t, d.Accept(cqlconn.Endpoint{Addr: "127.0.0.3:9042"}))
	assert.True(t, d.Accept(cqlconn.Endpoint{Addr: "not an address"}), "no HostInfo: accepted")
}
