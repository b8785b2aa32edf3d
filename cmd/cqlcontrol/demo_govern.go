package main

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
)

// synCounter is the network dialer under the dial governor with --govern: gocql's dials and
// ours reach it only when the governor let them through, so it counts SYNs, what the cluster
// sees. Who dialled is read from the dialling goroutine's stack (see dialledByControlConn):
// gocql's control connection, its pools, or ours. syns is appended by the dialling goroutines
// and read by the demo's.
type synCounter struct {
	inner gocql.Dialer
	mu    sync.Mutex
	syns  []synDial
}

type synDial struct {
	at time.Time
	by dialer
}

type dialer uint8

const (
	byOurs dialer = iota
	byGocqlControl
	byGocqlPool
)

// DialContext implements gocql.Dialer.
func (s *synCounter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := synDial{at: time.Now(), by: dialledBy()}
	s.mu.Lock()
	s.syns = append(s.syns, d)
	s.mu.Unlock()
	return s.inner.DialContext(ctx, network, addr)
}

// dialledBy says which part of the process is dialling: gocql's control connection, another
// part of gocql (its pools), or ours (no gocql frame on the stack).
func dialledBy() dialer {
	if dialledByControlConn() {
		return byGocqlControl
	}
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/gocql/gocql.") {
			return byGocqlPool
		}
		if !more {
			return byOurs
		}
	}
}

// summarize counts the SYNs started in [from, to) into v; the nil counter (no --govern) none.
func (s *synCounter) summarize(v *demoView, from, to time.Time) {
	if s == nil || from.IsZero() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.syns {
		if d.at.Before(from) || !d.at.Before(to) {
			continue
		}
		switch d.by {
		case byOurs:
			v.synsOurs++
		case byGocqlControl:
			v.synsGocqlControl++
		case byGocqlPool:
			v.synsGocqlPool++
		}
	}
}

// govern installs the dial governor on cluster (before controlconn.New, through the options it
// returns) with the SYN counter under it: gocql's dials and ours reach the network through it.
func (d *demoRun) govern(cluster *gocql.ClusterConfig) []controlconn.Option {
	if !d.cfg.govern {
		return nil
	}
	d.syns = &synCounter{inner: &net.Dialer{Timeout: cluster.ConnectTimeout}} // gocql's default dialer
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
