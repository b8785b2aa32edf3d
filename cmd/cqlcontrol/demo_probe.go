package main

import (
	"context"
	"sync"
	"time"

	"github.com/scylladb/gocqlx/v2"
	"github.com/scylladb/gocqlx/v2/table"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
)

// The data path probe reads one row through each host this often, each read bounded by
// probeTimeout.
const (
	probeInterval = 25 * time.Millisecond
	probeTimeout  = time.Second
	demoRowKey    = "demo"
)

// kvTable is the demo's data path: one row read through gocqlx.
var kvTable = table.New(table.Metadata{
	Name:    "cqlcontrol_demo.kv",
	Columns: []string{"k", "v"},
	PartKey: []string{"k"},
})

var demoSchema = []string{
	"CREATE KEYSPACE IF NOT EXISTS cqlcontrol_demo WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
	"CREATE TABLE IF NOT EXISTS cqlcontrol_demo.kv (k text PRIMARY KEY, v text)",
}

type kvRow struct {
	K string `db:"k"`
	V string `db:"v"`
}

// dataPathProbe reads the demo row through each host, through gocqlx, every probeInterval.
// One goroutine per host, so a slow host cannot delay the verdict on the others.
type dataPathProbe struct {
	x      gocqlx.Session
	hosts  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	results map[string][]probeResult // by host ID, in time order; appended by the probing goroutines
}

type probeResult struct {
	start, end time.Time
	ok         bool
}

func startDataPathProbe(x gocqlx.Session, hostIDs []string) *dataPathProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &dataPathProbe{x: x, hosts: hostIDs, cancel: cancel, results: map[string][]probeResult{}}
	for _, id := range hostIDs {
		p.wg.Add(1)
		go p.loop(ctx, id)
	}
	return p
}

func (p *dataPathProbe) loop(ctx context.Context, hostID string) {
	defer p.wg.Done()
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		p.read(ctx, hostID)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *dataPathProbe) read(ctx context.Context, hostID string) {
	qctx, cancel := context.WithTimeout(clientprobe.WithHost(ctx, hostID), probeTimeout)
	defer cancel()
	start := time.Now()
	var row kvRow
	err := p.x.Query(kvTable.Get()).WithContext(qctx).BindStruct(kvRow{K: demoRowKey}).GetRelease(&row)
	if ctx.Err() != nil {
		return // stopping: not a verdict on the host
	}
	p.mu.Lock()
	p.results[hostID] = append(p.results[hostID], probeResult{start, time.Now(), err == nil})
	p.mu.Unlock()
}

func (p *dataPathProbe) stop() {
	p.cancel()
	p.wg.Wait()
}

// summarize fills the hosts usable now and, once the whole cluster has been down (downAt), when
// the first read and every host answered reads started after that.
func (p *dataPathProbe) summarize(v *clientView, downAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := !downAt.IsZero()
	for _, id := range p.hosts {
		rs := p.results[id]
		if len(rs) > 0 && rs[len(rs)-1].ok {
			v.usable++
		}
		if downAt.IsZero() {
			continue
		}
		var first time.Time
		for _, r := range rs {
			if r.ok && !r.start.Before(downAt) {
				first = r.end
				break
			}
		}
		if first.IsZero() {
			all = false
			continue
		}
		if v.firstAt.IsZero() || first.Before(v.firstAt) {
			v.firstAt = first
		}
		if first.After(v.allAt) {
			v.allAt = first
		}
	}
	if !all {
		v.allAt = time.Time{}
	}
}
