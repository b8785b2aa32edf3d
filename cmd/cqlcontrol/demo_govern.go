package main

import (
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/clientprobe"
)

// synCounter is the network dialer under the dial governor with --govern: gocql's dials and
// ours reach it only when the governor let them through, so it counts SYNs, what the cluster
// sees, by who dialled: gocql's control connection, its pools, or ours (clientprobe.Dialer).
type synCounter struct{ clientprobe.Dialer }

// summarize counts the SYNs started in [from, to) into v; the nil counter (no --govern) none.
func (s *synCounter) summarize(v *demoView, from, to time.Time) {
	if s == nil || from.IsZero() {
		return
	}
	c := s.In(from, to)
	v.synsOurs, v.synsGocqlControl, v.synsGocqlPool = c.Ours, c.GocqlControl, c.GocqlPool
}

// govern installs the dial governor on cluster (before controlconn.New, through the options it
// returns) with the SYN counter under it: gocql's dials and ours reach the network through it.
func (d *demoRun) govern(cluster *gocql.ClusterConfig) []controlconn.Option {
	if !d.cfg.govern {
		return nil
	}
	d.syns = &synCounter{clientprobe.Dialer{Timeout: cluster.ConnectTimeout}} // gocql's default dialer
	cluster.Dialer = d.syns
	return []controlconn.Option{controlconn.WithDialGovernor(controlconn.Governor{})}
}

// demoGoverned is the --govern part of the result: SYNs counted at the dialer, under the
// governor, in the same window as the other dials (first node stopped until ready).
type demoGoverned struct {
	GocqlControlSYNs int   `json:"gocql_control_syns"`
	GocqlPoolSYNs    int   `json:"gocql_pool_syns"`
	ControlconnSYNs  int   `json:"controlconn_syns"`
	TotalSYNs        int   `json:"total_syns"`
	Refused          int64 `json:"refused_by_governor"` // since the start, not only in the outage
}

func (d *demoRun) governedResult(v demoView) *demoGoverned {
	if d.syns == nil {
		return nil
	}
	st := d.cc.GovernorStats()
	return &demoGoverned{
		GocqlControlSYNs: v.synsGocqlControl, GocqlPoolSYNs: v.synsGocqlPool, ControlconnSYNs: v.synsOurs,
		TotalSYNs: v.synsGocqlControl + v.synsGocqlPool + v.synsOurs,
		Refused:   st.RefusedBackoff + st.RefusedBudget,
	}
}
