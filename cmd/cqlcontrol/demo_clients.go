package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
)

// aloneClient is the demo's other client: a gocql session alone, as users run it (gocql's
// defaults: ReconnectInterval 60 s), on the same cluster. Its Dialer counts every dial it makes;
// its ConnectObserver tells its control connection's dials from its pools'.
type aloneClient struct {
	session *gocql.Session
	conns   *gocqlRecorder
	dialer  *clientprobe.Dialer
	probe   *dataPathProbe
}

// newCountingDialer is gocql's default dialer (a net.Dialer with the cluster's ConnectTimeout)
// that records every dial; set as the cluster's Dialer, under the dial governor it sees only
// the dials the governor let through: the SYNs the cluster sees.
func newCountingDialer(cluster *gocql.ClusterConfig) *clientprobe.Dialer {
	d := &clientprobe.Dialer{Timeout: cluster.ConnectTimeout}
	cluster.Dialer = d
	return d
}

// govern installs the dial governor on cluster (before controlconn.New, through the options it
// returns), unless --ungoverned.
func (d *demoRun) govern() []controlconn.Option {
	if d.cfg.ungoverned {
		return []controlconn.Option{controlconn.WithDialGovernor(controlconn.Governor{Off: true})}
	}
	return []controlconn.Option{controlconn.WithDialGovernor(controlconn.Governor{})}
}

// startAlone opens the gocql-alone session on the simulated cluster.
func (d *demoRun) startAlone(ctx context.Context) error {
	cluster := gocql.NewCluster(d.sim.ContactPoints()...)
	cluster.Port = d.sim.Port()
	cluster.ReconnectInterval = d.cfg.gocqlReconnect
	a := &aloneClient{conns: &gocqlRecorder{}}
	a.dialer = newCountingDialer(cluster)
	cluster.ConnectObserver = a.conns
	cluster.PoolConfig.HostSelectionPolicy = clientprobe.NewHostPin(gocql.RoundRobinHostPolicy())
	cluster.Logger = log.New(io.Discard, "", 0)
	if d.cfg.verbose {
		cluster.Logger = log.New(d.log, "gocql-alone ", log.Lmicroseconds)
	}
	setPhase(ctx, "while waiting for the gocql-alone session")
	s, err := createSession(ctx, cluster)
	if err != nil {
		return fmt.Errorf("gocql-alone session: %w", err)
	}
	a.session = s
	d.alone = a
	return nil
}

// createSession runs CreateSession, which takes no context, on a goroutine of its own,
// abandoned (its session closed when it comes) if ctx ends first.
func createSession(ctx context.Context, cluster *gocql.ClusterConfig) (*gocql.Session, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sessions := make(chan sessionResult)
	go openSession(sctx, cluster, sessions)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-sessions:
		return r.session, r.err
	}
}

// close stops the alone client. Safe on a partial start.
func (a *aloneClient) close() {
	if a == nil {
		return
	}
	if a.probe != nil {
		a.probe.stop()
	}
	if a.session != nil {
		a.session.Close()
	}
}

// clientView is what one client's data path and dials look like at one instant.
type clientView struct {
	usable    int       // hosts whose latest read answered
	firstAt   time.Time // first read answered after the cluster went down
	allAt     time.Time // every host has answered a read after the cluster went down
	ctlBackAt time.Time // gocql's control connection back (the alone client)
	dials     int       // at the client's Dialer, from the stop until allAt (or now)
	dialTimes []time.Time
}

// countDials fills the dials of c at dialer from the first node stopping until c's data path
// is back (every host usable; the dial that brought the last one back included) or now.
func countDials(c *clientView, dialer *clientprobe.Dialer, from, now time.Time) {
	if from.IsZero() {
		return
	}
	to := now
	if !c.allAt.IsZero() {
		to = c.allAt.Add(time.Nanosecond)
	}
	for _, dl := range dialer.Dials(from, to) {
		c.dialTimes = append(c.dialTimes, dl.At)
	}
	c.dials = len(c.dialTimes)
}
