package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// Address churn (issue 18, defect 7): pods come back with new IPs, so a node added and
// removed six times leaves six addresses behind. The governor's host table and the cache of
// gocql's HostInfos used to keep every one (9 each here), which also stretched the budget's
// rotation over hosts that no longer exist; they keep only the hosts of the latest metadata.
func TestGovernedHostTablesForgetRemovedHosts(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g := startGovernedSession(t)
		defer g.close()
		for range 6 {
			n, err := g.sim.AddNode()
			require.NoError(t, err)
			time.Sleep(5 * time.Second) // announced, dialled by gocql's pool and our probe
			require.NoError(t, g.sim.RemoveNode(n.Index()))
			time.Sleep(5 * time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, g.cc.Refresh(ctx))
		g.cc.gov.g.mu.Lock()
		gateHosts := g.cc.gov.g.gate.Hosts()
		g.cc.gov.g.mu.Unlock()
		t.Logf("FIGURE after 6 adds and removals on 3 nodes: governor hosts %d, HostInfo cache %d", gateHosts, g.hosts.Len())
		assert.LessOrEqual(t, gateHosts, 3, "the governor's table: the 3 nodes left")
		assert.LessOrEqual(t, g.hosts.Len(), 3, "the HostInfo cache: the 3 nodes left")
	})
}

// A shared governor forgets a host only when no member lists it, and nothing before every
// member has read metadata; each member's hosts are read from its own published hosts, not
// copied into the governor. Checked to fail with Known forgetting what the calling member
// alone does not list.
func TestSharedGovernorForgetsOnlyHostsNoMemberLists(t *testing.T) {
	g, err := newDialGovernor(Governor{}, 0, func() float64 { return 0.5 }, nil)
	require.NoError(t, err)
	hostsOf := func(addrs ...string) func() []plan.PlanHost {
		hosts := make([]plan.PlanHost, len(addrs))
		for i, a := range addrs {
			hosts[i].Addr = a
		}
		return func() []plan.PlanHost { return hosts }
	}
	m1 := g.join(nil, nil, hostsOf("10.0.0.1:9042", "10.0.0.2:9042"))
	defer m1.Close()
	m2 := g.join(nil, nil, hostsOf("10.0.0.2:9042", "10.0.0.3:9042"))
	defer m2.Close()
	for _, a := range []string{"10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042", "10.0.0.4:9042"} {
		m1.HostDown(a) // a record for each
	}
	hosts := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.gate.Hosts()
	}
	require.Equal(t, 4, hosts())
	m1.Known()
	assert.Equal(t, 4, hosts(), "m2 has not read metadata: nothing forgotten")
	m2.Known()
	assert.Equal(t, 3, hosts(), "10.0.0.4 is listed by neither member: forgotten; 10.0.0.1 and .3 by one each: kept")
}
