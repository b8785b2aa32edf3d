package core

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Address churn (issue 18, defect 7): pods come back with new IPs, so a node added and
// removed six times leaves six addresses behind. The governor's host table and the cache of
// gocql's HostInfos used to keep every one (9 each here), which also stretched the budget's
// rotation over hosts that no longer exist; they keep only the hosts of the latest metadata.
func TestGovernedHostTablesForgetRemovedHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
