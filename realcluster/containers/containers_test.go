package containers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// Every container of the package's clusters is on the host's network alone, with its node's
// directory mounted at the same path; the check create applies to what the engine created
// refuses anything else.
func TestHostNetworkOnly(t *testing.T) {
	n := realcluster.NodeLayout{Index: 0, IP: "127.0.0.154", Dir: "/tmp/x/node1", Args: []string{"-Xmx1m"}}
	req := Request("img", n)
	require.Empty(t, req.Networks)
	require.Empty(t, req.ExposedPorts)
	require.Nil(t, req.EndpointSettingsModifier)
	require.Equal(t, []string{"-Xmx1m"}, req.Cmd)
	var hc container.HostConfig
	req.HostConfigModifier(&hc)
	require.Equal(t, network.NetworkHost, string(hc.NetworkMode))
	require.Equal(t, []string{"/tmp/x/node1:/tmp/x/node1"}, hc.Binds)
	require.Empty(t, hc.PortBindings)

	ok := &container.InspectResponse{HostConfig: &hc,
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"host": {}}}}
	require.NoError(t, HostNetworkOnly(ok))
	require.Error(t, HostNetworkOnly(nil))
	require.Error(t, HostNetworkOnly(&container.InspectResponse{HostConfig: &container.HostConfig{NetworkMode: "bridge"}}))
	require.Error(t, HostNetworkOnly(&container.InspectResponse{HostConfig: &container.HostConfig{NetworkMode: "host"},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"podman": {}}}}))
	require.Error(t, HostNetworkOnly(&container.InspectResponse{HostConfig: &container.HostConfig{NetworkMode: "host",
		PortBindings: network.PortMap{network.MustParsePort("9042/tcp"): {{HostPort: "0"}}}}}))
}

// startT is StartT for this package's tests: real Cassandra suites only (make real, make
// containers, which sets EnvRequired: no skip there).
func startT(t *testing.T, base string) *Cluster {
	t.Helper()
	realcluster.RequireReal(t)
	return StartT(t, Config{Config: realcluster.Config{BaseIP: base}})
}

// The restart verbs through the Docker API on a 3-container cluster: a kill and a start, a
// pause (half-open: no CQL answer) and a resume, a graceful stop and a start; then a full
// restart with SIGKILL, after which a row written before is read back (the node directories
// are the host's: data survives).
func TestClusterVerbs(t *testing.T) {
	c := startT(t, "127.0.0.154")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range c.Hosts() {
		require.DirExists(t, filepath.Join(c.Dir(), "node"+string(rune('1'+i)), "data"))
	}

	cluster := gocql.NewCluster(c.Hosts()...)
	cluster.Timeout = 10 * time.Second
	cluster.Consistency = gocql.All
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	bounded.Close(t, "gocql Session.Close", session.Close)
	for _, q := range []string{
		"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY, v text)",
		"INSERT INTO ks.t (k, v) VALUES (1, 'before the restarts')",
	} {
		require.NoError(t, session.Query(q).Exec(), q)
	}

	require.NoError(t, c.Kill(2))
	require.Error(t, realcluster.AnswersCQL(ctx, c.addr(2)), "a killed node does not answer")
	require.NoError(t, c.Start(ctx, 2))

	require.NoError(t, c.Pause(1))
	hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
	err = realcluster.AnswersCQL(hctx, c.addr(1))
	hcancel()
	require.Error(t, err, "a paused node does not answer")
	require.NoError(t, c.Resume(1))
	require.NoError(t, realcluster.AnswersCQL(ctx, c.addr(1)), "a resumed node answers")

	require.NoError(t, c.Stop(0))
	require.Error(t, realcluster.AnswersCQL(ctx, c.addr(0)), "a stopped node does not answer")
	require.NoError(t, c.Start(ctx, 0))

	down, err := realcluster.FullRestart(ctx, c, 2*time.Second, true)
	require.NoError(t, err)
	first := realcluster.FirstReady(c, down)
	require.False(t, first.IsZero())
	t.Logf("FIGURE %s full restart (SIGKILL, 2 s down): first node answered CQL %v after the last was down", c.Name(), first.Sub(down).Round(time.Millisecond))

	var v string
	require.Eventually(t, func() bool {
		return session.Query("SELECT v FROM ks.t WHERE k = 1").Consistency(gocql.All).Scan(&v) == nil
	}, 2*time.Minute, 500*time.Millisecond, "the row is read back from all 3 nodes")
	require.Equal(t, "before the restarts", v)
}
