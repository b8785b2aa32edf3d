package controlconn

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/cqlcontrol/cqlcontrol/internal/memcluster"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type skipRecorder struct {
	NopObserver
	mu      sync.Mutex
	skipped [][]metadata.SkippedPeer
	dropped int
}

func (r *skipRecorder) PeersSkipped(s []metadata.SkippedPeer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped = append(r.skipped, s)
}

func (r *skipRecorder) ReplyDropped(Endpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped++
}

// Issue 10, item 2, end to end. system.peers has a row with the token "xyz" beside two good
// ones: the control connection comes up with the other two hosts (before the fix Start never
// succeeded: the whole refresh was rejected) and reports the row in Status and to the observer.
func TestBadPeerRowIsSkippedAndReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c *memcluster.Cluster
		peers := []memcluster.Column{
			{Name: "peer", Type: datatype.Inet}, {Name: "host_id", Type: datatype.Uuid}, {Name: "rpc_address", Type: datatype.Inet},
			{Name: "data_center", Type: datatype.Varchar}, {Name: "rack", Type: datatype.Varchar},
			{Name: "tokens", Type: datatype.NewSet(datatype.Varchar)},
		}
		c = memcluster.New(memcluster.Config{Nodes: 3, ClusterName: fakeClusterName,
			OnQuery: func(q string, _ []*primitive.Value) message.Message {
				if !strings.Contains(q, "system.peers") || strings.Contains(q, "peers_v2") {
					return nil
				}
				// Served by node 1 (the only contact point): nodes 2 and 3, and a bad row.
				var rows [][]any
				for _, n := range []int{2, 3} {
					m := c.Member(n)
					rows = append(rows, []any{m.IP, m.HostID, m.IP, m.DC, "rack1", []string{"9" + m.HostID[len(m.HostID)-1:]}})
				}
				bad := c.Member(3)
				rows = append(rows, []any{bad.IP.To16(), "00000000-0000-4000-8000-000000000099", bad.IP, bad.DC, "rack1", []string{"xyz"}})
				return memcluster.Rows(peers, rows)
			}})
		defer c.Close()
		obs := &skipRecorder{}
		cfg := Config{ContactPoints: c.ContactPoints()[:1], Conn: ConnConfig{Dialer: c}}
		cc, err := NewWithConfig(cfg, WithRand(half), WithObserver(obs))
		require.NoError(t, err)
		defer func() { _ = cc.Close() }()
		startCC(t, cc)

		assert.Equal(t, 3, cc.Snapshot().Len(), "local and the two good peers")
		st := cc.Status()
		require.Len(t, st.SkippedPeers, 1)
		assert.Equal(t, 2, st.SkippedPeers[0].Row)
		assert.ErrorIs(t, st.SkippedPeers[0].Err, metadata.ErrInvalidPeer)
		assert.ErrorContains(t, st.SkippedPeers[0].Err, `"xyz"`)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.Len(t, obs.skipped, 1, "one refresh, one report")
		assert.Len(t, obs.skipped[0], 1)
	})
}
