package realcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// Provider is a cluster that restart suites run against, whatever runs it: real Cassandra
// processes (Cluster), cqlsim in-process (Sim), or cqlsim containers (the integration suite's,
// where a Docker engine exists). Nodes are numbered from 0; every verb returns when the fault
// is done (Start: when the node answers a CQL handshake, the same test for every provider).
type Provider interface {
	// Name says what runs the nodes ("cassandra 5.0.8", "cqlsim 5.0").
	Name() string
	// Hosts returns the nodes' addresses in order; every node listens on Port.
	Hosts() []string
	Port() int
	// Stop stops node i gracefully, Kill crashes it (nothing announced), Pause makes it
	// half-open (connections accepted by the kernel, nothing answered) until Resume.
	Stop(i int) error
	Kill(i int) error
	Pause(i int) error
	Resume(i int) error
	// Start starts node i and returns once it answers CQL.
	Start(ctx context.Context, i int) error
	// ReadyAt returns when node i last became ready (answered CQL after its last start).
	ReadyAt(i int) time.Time
	Close() error
}

// Name implements Provider.
func (c *Cluster) Name() string { return "cassandra " + c.inst.Version }

// Stop implements Provider.
func (c *Cluster) Stop(i int) error { return c.Node(i).Stop() }

// Kill implements Provider.
func (c *Cluster) Kill(i int) error { return c.Node(i).Kill() }

// Pause implements Provider.
func (c *Cluster) Pause(i int) error { return c.Node(i).Pause() }

// Resume implements Provider.
func (c *Cluster) Resume(i int) error { c.Node(i).Resume(); return nil }

// Start implements Provider.
func (c *Cluster) Start(ctx context.Context, i int) error { return c.Node(i).Start(ctx) }

// ReadyAt implements Provider.
func (c *Cluster) ReadyAt(i int) time.Time { return c.Node(i).ReadyAt() }

// StorageAt returns when node i's storage port first accepted since its last start (Node.StorageAt).
func (c *Cluster) StorageAt(i int) time.Time { return c.Node(i).StorageAt() }

// Sim is a Provider of a cqlsim cluster in this process.
type Sim struct {
	C     *cqlsim.Cluster
	ready []time.Time
}

// StartSim starts a cqlsim cluster (cfg as cqlsim.Start takes it) as a Provider.
func StartSim(cfg cqlsim.Config) (*Sim, error) {
	c, err := cqlsim.Start(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sim{C: c, ready: make([]time.Time, len(c.Nodes()))}
	now := time.Now()
	for i := range s.ready {
		s.ready[i] = now
	}
	return s, nil
}

// Name implements Provider.
func (s *Sim) Name() string { return "cqlsim " + s.C.Config().ReleaseVersion }

// Hosts implements Provider.
func (s *Sim) Hosts() []string {
	var out []string
	for _, n := range s.C.Nodes() {
		out = append(out, n.IP().String())
	}
	return out
}

// Port implements Provider.
func (s *Sim) Port() int { return s.C.Port() }

// Stop implements Provider.
func (s *Sim) Stop(i int) error { s.C.Nodes()[i].Stop(); return nil }

// Kill implements Provider.
func (s *Sim) Kill(i int) error { s.C.Nodes()[i].Kill(); return nil }

// Pause implements Provider: the node is blackholed (accepts, never answers).
func (s *Sim) Pause(i int) error { s.C.Nodes()[i].Blackhole(true); return nil }

// Resume implements Provider.
func (s *Sim) Resume(i int) error { s.C.Nodes()[i].Blackhole(false); return nil }

// Start implements Provider.
func (s *Sim) Start(ctx context.Context, i int) error {
	n := s.C.Nodes()[i]
	if err := n.Start(); err != nil {
		return err
	}
	at, err := awaitCQL(ctx, net.JoinHostPort(n.IP().String(), strconv.Itoa(s.C.Port())), time.Minute)
	if err != nil {
		return err
	}
	s.ready[i] = at
	return nil
}

// ReadyAt implements Provider.
func (s *Sim) ReadyAt(i int) time.Time { return s.ready[i] }

// Close implements Provider.
func (s *Sim) Close() error { return s.C.Close() }

// awaitCQL polls addr every 10 ms until it answers a CQL handshake, and returns when it first did.
func awaitCQL(ctx context.Context, addr string, within time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		err := AnswersCQL(hctx, addr)
		hcancel()
		if err == nil {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("realcluster: %s did not answer CQL within %v: %w", addr, within, errors.Join(err, ctx.Err()))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// FullRestart stops every node of p (killed when kill is set, else gracefully), keeps the
// cluster down for outage after the last node is down, then starts every node at once and
// returns when all answer CQL. down is when the last node was down.
func FullRestart(ctx context.Context, p Provider, outage time.Duration, kill bool) (down time.Time, err error) {
	if down, err = StopAll(p, kill); err != nil {
		return down, err
	}
	if err := sleepCtx(ctx, outage); err != nil {
		return down, err
	}
	return down, StartEvery(ctx, p)
}

// StopAll stops every node of p at once (killed when kill is set, else gracefully) and returns
// when the last one is down.
func StopAll(p Provider, kill bool) (time.Time, error) {
	err := each(p, func(i int) error {
		if kill {
			return p.Kill(i)
		}
		return p.Stop(i)
	})
	return time.Now(), err
}

// StartEvery starts every node of p at once and returns when all answer CQL; each node's
// ReadyAt says when it did. It calls Provider.Start on every node, running or not, and a real
// node that is already running makes it fail; (*Cluster).StartAll skips running nodes instead,
// hence the other name.
func StartEvery(ctx context.Context, p Provider) error {
	return each(p, func(i int) error { return p.Start(ctx, i) })
}

// FirstReady returns the earliest ReadyAt of p's nodes after t (zero if none).
func FirstReady(p Provider, after time.Time) time.Time {
	var first time.Time
	for i := range p.Hosts() {
		if at := p.ReadyAt(i); at.After(after) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

func each(p Provider, f func(i int) error) error {
	n := len(p.Hosts())
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- f(i) }()
	}
	var all []error
	for range n {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
