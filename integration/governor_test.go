package integration

// The dial governor on real sockets: a gocql session with our ControlConnection governed,
// beside a gocql session alone, through one full-cluster outage of the simulator. Every dial
// of each client is counted at its Dialer (the governor's inner dialer: what reaches the
// network).
//
// Checked to fail without the governor (WithDialGovernor removed from the governed client):
// it then dialled as much as gocql alone plus ours, over the 27-dial bound.

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	governedOutage = 20 * time.Second
	// governedMaxDials is issue 18's bound for 3 nodes and 20 s (27). Past three hosts the
	// budget's interval divides by hosts ÷ 3 (since 2026-12-06; issue 18's bound for 7 nodes
	// was 31), so a host's turn comes as often as on 3: 7 nodes, the budget's 39 or so dials in
	// 20 s, a failed redial of each host as its connections drop, ours' first sweep and a
	// margin: 60; 12 nodes, 67 or so, the same and a margin: 100. Issue 27 asks for at most a
	// third of gocql alone's (301 and 519 in each run).
	governedMaxDials, governedMaxDialsSeven, governedMaxDialsTwelve = 27, 60, 100
	// governedBackWithin: for the first minute of an outage the budget's interval is 1.2 s
	// (±10 %); add gocql's 100 ms governed tick and margin for a shared machine. Longer
	// outages add the interval's growth, outage/50.
	governedBackWithin = 2500 * time.Millisecond
	// dataPathBackWithin: a host's pool is refilled on gocql's reconnect tick
	// (adapter.GovernedReconnectInterval, 100 ms) once the governor opens the host (at once when ours
	// is back, or on its own dial slot); the rest is margin for a shared machine. Longer
	// outages add the budget interval's growth, outage/50, as for ours.
	dataPathBackWithin = 2500 * time.Millisecond
	// rollingDataPathWithin: in a rolling restart ours stays up and opens a restarted host
	// on its UP announcement (GossipDelay, 1 s, after the port opens); gocql's next 1 s
	// reconnect tick refills the pool; the rest is margin for a shared machine.
	rollingDataPathWithin = 2500 * time.Millisecond
)

// attemptDials counts the dials of our connection's attempts (an Observer: DialStarted), so
// that the rest of ours's dials are its reconciliation probes.
type attemptDials struct {
	clientprobe.Stamps
}

func (a *attemptDials) DialStarted(controlconn.Endpoint) { a.Add(time.Now()) }

// servedBy runs a query pinned to ip and reports whether that host answered it.
func servedBy(s *gocql.Session, ip string) bool {
	var addr net.IP
	err := s.Query("SELECT rpc_address FROM system.local").WithContext(clientprobe.WithHost(context.Background(), ip)).Scan(&addr)
	return err == nil && addr.String() == ip
}

// governedProcess is a gocql session and our ControlConnection sharing one governor, as an
// application would set them up (gocql's default 60 s reconnect tick, which the governor
// makes 1 s), with a pinnable policy and every dial counted. contacts, if given, replace the
// contact points (both control connections start on the first).
type governedProcess struct {
	cc      *controlconn.ControlConnection
	session *gocql.Session
	dials   *clientprobe.Dialer // every dial that reached the network, by caller
	attempt *attemptDials       // our connection's attempt dials (the rest of ours's are probes)
}

func startProcess(t *testing.T, sim *cqlsim.Cluster, governed bool, contacts ...string) *governedProcess {
	t.Helper()
	p := &governedProcess{dials: &clientprobe.Dialer{}, attempt: &attemptDials{}}
	cluster := gocqlCluster(sim)
	if len(contacts) > 0 {
		cluster.Hosts = contacts
	}
	cluster.ReconnectInterval = 60 * time.Second
	cluster.Dialer = p.dials
	cluster.PoolConfig.HostSelectionPolicy = clientprobe.NewHostPin(gocql.RoundRobinHostPolicy())
	opts := []controlconn.Option{controlconn.WithObserver(controlconn.Observer{DialStarted: p.attempt.DialStarted})}
	if !governed {
		opts = append(opts, controlconn.WithDialGovernor(controlconn.Governor{Off: true})) // governed is the default
	}
	var err error
	p.cc, err = controlconn.New(cluster, controlconn.Cadence{StableAfter: restartStableAfter}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.cc.Close()) })
	if governed {
		require.Equal(t, adapter.GovernedReconnectInterval, cluster.ReconnectInterval)
	}
	p.session, err = cluster.CreateSession()
	require.NoError(t, err)
	bounded.Close(t, "gocql Session.Close", p.session.Close)
	startCC(t, p.cc, 10*time.Second)
	realtime.Eventually(t, 10*time.Second, func() bool {
		for _, ip := range hostsOf(sim.Nodes()) {
			if !servedBy(p.session, ip) {
				return false
			}
		}
		return true
	}, "every host serves the session")
	return p
}

func TestGovernedFullOutageAgainstGocqlAlone(t *testing.T) {
	governedOutages(t, 3, governedOutage, 1, governedMaxDials, governedBackWithin, dataPathBackWithin)
}

// The same 20 s outage on 7 nodes (about 25 s): in make long. The budget's interval divides
// by hosts ÷ 3 past three hosts, which controlconn's TestGovernorDialsPerHostVirtualTime pins
// in virtual time.
func TestGovernedFullOutageSevenNodes(t *testing.T) {
	skipUnlessLong(t, "about 25 s; controlconn's TestGovernorDialsPerHostVirtualTime pins 7 nodes in virtual time")
	governedOutages(t, 7, governedOutage, 1, governedMaxDialsSeven, governedBackWithin, dataPathBackWithin)
}

// The same 20 s outage on 12 nodes (about 25 s): in make long. Issue 27 asks the process's
// dials during the outage at most a third of gocql alone's at 3, 7 and 12 nodes.
func TestGovernedFullOutageTwelveNodes(t *testing.T) {
	skipUnlessLong(t, "about 25 s; controlconn's TestGovernorDialsPerHostVirtualTime pins 12 nodes in virtual time")
	governedOutages(t, 12, governedOutage, 1, governedMaxDialsTwelve, governedBackWithin, dataPathBackWithin)
}

// One 60 s full outage of 3 nodes (about 65 s, in make long): at most 70 dials of the
// governed process, ours and every host's data path back in time. controlconn's
// TestGovernorSixtySecondOutageVirtualTime pins the same bounds in virtual time for the
// regular suite. The ten-outage run is TestGovernedLongOutages.
func TestGovernedSixtySecondOutage(t *testing.T) {
	skipUnlessLong(t, "about 65 s; controlconn's TestGovernorSixtySecondOutageVirtualTime pins it in virtual time")
	governedOutages(t, 3, 60*time.Second, 1, 60, governedBackWithin, dataPathBackWithin)
}

// TestGovernedLongOutages is issue 18's long case: ten 60 s full outages of 3 nodes, at most
// 60 dials of the governed process each, ours back within 1.5 s of the first node_up and
// every host's data path within 2.5 s of its own (the max of ten: their p99). About 11
// minutes: run by `make long` only.
func TestGovernedLongOutages(t *testing.T) {
	skipUnlessLong(t, "about 11 minutes")
	governedOutages(t, 3, 60*time.Second, 10, 60, 1500*time.Millisecond, 2500*time.Millisecond)
}

// budgetInterval is the default Governor's budget interval after an outage of d (jitter aside):
// OutageShare of it, within MinInterval and MaxInterval.
func budgetInterval(d time.Duration) time.Duration {
	g := controlconn.Governor{}.WithDefaults(0)
	return min(max(time.Duration(float64(d)*g.OutageShare), g.MinInterval), g.MaxInterval)
}

// longEnv enables the long integration cases (make long sets it): real-time repeats of figures
// that virtual-time tests pin in the regular suite, and outages of a minute or more.
const longEnv = "CQLCONTROL_LONG"

// skipUnlessLong skips a long case unless longEnv is set, saying why: how long it takes and
// what covers it in the regular suite.
func skipUnlessLong(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(longEnv) == "" {
		t.Skipf("long case (%s): run make long, or set %s=1", why, longEnv)
	}
}

// governedOutages runs n full-cluster outages of the given length on a cluster of nodes with
// a governed process and gocql alone side by side, and checks each outage's dials and the
// recovery of ours and of every host's data path: within oursWithin and dataWithin of ready
// (each plus outage/50 beyond the first minute, the budget interval's growth).
func governedOutages(t *testing.T, nodes int, outage time.Duration, n, maxDials int, oursWithin, dataWithin time.Duration) {
	sim := startCluster(t, cqlsim.Config{Nodes: nodes, ReleaseVersion: "3.11.17"})
	p := startProcess(t, sim, true)
	cc, session, governed := p.cc, p.session, p.dials

	// gocql alone, as users run it (default 60 s reconnect tick).
	alone := &clientprobe.Dialer{}
	aloneCluster := gocqlCluster(sim)
	aloneCluster.ReconnectInterval = 60 * time.Second
	aloneCluster.Dialer = alone
	aloneSession, err := aloneCluster.CreateSession()
	require.NoError(t, err)
	defer bounded.Run(t, "gocql Session.Close (the session alone)", bounded.CloseWithin, aloneSession.Close)

	ips := hostsOf(sim.Nodes())
	var oursLate, dataLate realtime.Latencies
	for round := range n {
		waitStable(t, cc, restartStableAfter+100*time.Millisecond)
		begin := time.Now()
		sim.StopAll()
		downs := eventsIn(sim, begin, time.Now(), kind(cqlsim.EventNodeDown))
		require.Len(t, downs, len(ips))
		allDown := downs[len(downs)-1].At
		time.Sleep(time.Until(allDown.Add(outage)))
		require.NoError(t, sim.StartAll())
		up, ok := firstEvent(sim, begin, kind(cqlsim.EventNodeUp))
		require.True(t, ok)
		connectedAt, ep := connectedAfter(t, cc, up.At, 45*time.Second)
		oursLate = append(oursLate, connectedAt.Sub(up.At))

		// Data path: each host serves a query pinned to it, measured from its own node_up. Every
		// host is polled in each round, so that a late host does not delay the others' figures
		// (polled one after another, every host looked as late as the latest).
		servedAt := make([]time.Time, len(ips))
		realtime.Eventually(t, 30*time.Second, func() bool {
			all := true
			for i, ip := range ips {
				if servedAt[i].IsZero() && servedBy(session, ip) {
					servedAt[i] = time.Now()
				}
				all = all && !servedAt[i].IsZero()
			}
			return all
		}, "every host serves the governed session again")
		var roundData realtime.Latencies
		for i := range ips {
			nodeUp := awaitEvent(t, sim, begin, 10*time.Second, nodeEvent(cqlsim.EventNodeUp, i))
			roundData = append(roundData, servedAt[i].Sub(nodeUp.At))
		}
		dataLate = append(dataLate, roundData...)

		g, u := governed.In(begin, connectedAt).Total(), alone.In(begin, connectedAt).Total()
		t.Logf("FIGURE governed %v full outage %d/%d, %d nodes: %d dials of the governed process (gocql + ours) from the stop until ours was back, gocql alone %d; ours back %s after the first node_up (on %s); data path back per host after its node_up %v; governor: %+v",
			outage, round+1, n, nodes, g, u, realtime.Millis(connectedAt.Sub(up.At)), ep.Addr, roundData, cc.GovernorStats())
		assert.LessOrEqual(t, g, maxDials, "dials of the governed process")
		assert.LessOrEqual(t, 3*g, u, "the governed process dials at most a third of what gocql alone does (issue 27)")
	}
	t.Logf("FIGURE governed %v full outages x%d, %d nodes: ours back %v, data path %v", outage, n, nodes, oursLate, dataLate)
	growth := max(0, budgetInterval(outage)-controlconn.Governor{}.WithDefaults(0).MinInterval)
	assert.LessOrEqual(t, oursLate.Max(), oursWithin+growth, "ours back after the first node_up (max)")
	assert.LessOrEqual(t, dataLate.Max(), dataWithin+growth, "every host's data path back after its node_up (max)")
	st := cc.GovernorStats()
	assert.Positive(t, st.RefusedBudget+st.RefusedBackoff, "the governor refused dials")
}

// Rolling restart of 5 nodes, 5 s down each: the governed data path never loses a host other
// than the one restarting, the restarting one serves again within rollingDataPathWithin of its
// node_up, and the governed process dials no more than the same process ungoverned (README
// setup) beside it: gocql's dials, our connection's attempts, and the whole process but our
// reconciliation probes, whose number (one per other host, skipped for a host gocql reported
// on since our adoption) depends on whether gocql's report beat our adoption by a few
// milliseconds, in either process, and is bounded instead. About 38 s.
//
// Checked to fail before announced-down hosts (and the host our connection was lost from) got
// MaxInterval between their slots, and while losing our connection made the whole cluster
// unreachable. After the governor met the single-owner ControlConnection it failed 3 of 4
// runs, for three reasons, each seen in the governor's decisions logged during failing runs
// and each with a controlconn unit test that fails when it is put back: a refusal that was
// not a non-temporary *net.OpError, which gocql's pool fill retried 3 times 1 s apart on its
// one reconnect goroutine (a host's pool back 5.2-8.4 s after its node_up, waiting behind the
// next node's refused refill); gocql's redial of the host ours was lost from, failing just
// before ours noticed the loss, ending the presumption that the rest is reachable; and a
// connected gocql dial while the cluster was known reachable counting as evidence, handed to
// our attempt in flight, which then dialled one more host.
func TestGovernedRollingRestart(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 5, ReleaseVersion: "3.11.17"})
	// Both processes' control connections (gocql's and ours) start on the node restarted last,
	// so each fails over exactly once, at the end, and the two processes' dials compare.
	ips := hostsOf(sim.Nodes())
	gov := startProcess(t, sim, true, ips[len(ips)-1])
	ungov := startProcess(t, sim, false, ips[len(ips)-1])
	// Each first connection probes the other hosts at random moments within a second (the
	// reconciliation probes): let them end before the window that counts the restart's dials
	// opens (under CI load the ungoverned process started fast enough that one of the governed
	// process's first probes fell in the window: 5 probes counted, not at most 4).
	time.Sleep(1500 * time.Millisecond)

	type probe struct {
		host int
		at   time.Time
		ok   bool
	}
	var probes []probe
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for i, ip := range ips {
				ok := servedBy(gov.session, ip)
				probes = append(probes, probe{host: i, at: time.Now(), ok: ok})
			}
		}
	}()
	begin := time.Now()
	require.NoError(t, sim.RollingRestart(5*time.Second, time.Second))
	time.Sleep(rollingDataPathWithin)
	close(stop)
	<-done
	end := time.Now()

	var back realtime.Latencies
	for i := range ips {
		down := awaitEvent(t, sim, begin, time.Second, nodeEvent(cqlsim.EventNodeDown, i))
		up := awaitEvent(t, sim, begin, time.Second, nodeEvent(cqlsim.EventNodeUp, i))
		servedAgain := time.Time{}
		for _, p := range probes {
			if p.host != i {
				continue
			}
			restarting := within(p.at, down.At.Add(-200*time.Millisecond), up.At.Add(rollingDataPathWithin))
			assert.True(t, p.ok || restarting, "host %d failed a pinned query at %s, outside its own restart", i, p.at.Sub(begin))
			if p.ok && servedAgain.IsZero() && p.at.After(up.At) {
				servedAgain = p.at
			}
		}
		require.False(t, servedAgain.IsZero(), "host %d never served again", i)
		back = append(back, servedAgain.Sub(up.At))
		if late := servedAgain.Sub(up.At); late > rollingDataPathWithin {
			// For whoever looks into it: what the simulator did around this host's restart.
			for _, e := range eventsIn(sim, down.At.Add(-time.Second), servedAgain, func(e cqlsim.Event) bool { return e.Node == i }) {
				t.Logf("host %d late by %s: %s %s %s %s", i, realtime.Millis(late), e.At.Sub(begin).Round(time.Millisecond), e.Kind, e.Client, e.Detail)
			}
		}
	}
	gd, ud := processDials(gov, begin, end), processDials(ungov, begin, end)
	t.Logf("FIGURE rolling restart, 5 nodes, 5 s down each: governed data path back per host after its node_up %v; dials governed / ungoverned (README setup): gocql %d / %d, our attempts %d / %d, our probes %d / %d, whole process %d / %d; governor %+v",
		back, gd.gocql, ud.gocql, gd.attempts, ud.attempts, gd.probes, ud.probes, gd.total(), ud.total(), gov.cc.GovernorStats())
	assert.LessOrEqual(t, back.Max(), rollingDataPathWithin, "every host's governed data path back after its node_up")
	// One dial of slack: the governed session reconnects on a short tick, backed off per host
	// (HostBackoff, doubling), so whether its second dial to the node restarted last lands
	// before that node is up depends on the tick's phase (a CI run had 18 against 17, the one
	// extra a failed dial to the last node 2.1 s into its 5 s down).
	if !assert.LessOrEqual(t, gd.gocql, ud.gocql+1, "gocql's dials governed (short reconnect tick) <= ungoverned (60 s), +1 for the tick's phase") ||
		gd.probes > len(ips)-1 || ud.probes > len(ips)-1 || // more than the adoption's
		gd.attempts > ud.attempts { // show why
		for name, p := range map[string]*governedProcess{"governed": gov, "ungoverned": ungov} {
			for _, d := range p.dials.Dials(begin, end) {
				t.Logf("%s dial at %s by %s to %s", name, d.At.Sub(begin).Round(time.Millisecond), d.By, d.Addr)
			}
		}
		for _, e := range eventsIn(sim, begin, end, func(cqlsim.Event) bool { return true }) {
			t.Logf("sim %s %s node %d %s %s", e.At.Sub(begin).Round(time.Millisecond), e.Kind, e.Node, e.Client, e.Detail)
		}
	}
	assert.LessOrEqual(t, gd.attempts, ud.attempts, "our connection's attempt dials governed <= ungoverned")
	assert.LessOrEqual(t, gd.total()-gd.probes, ud.total()-ud.probes, "governed dials <= ungoverned (our probes aside)")
	// Probes: one per other host on each adoption (both processes adopt once, after the last
	// node's stop), fewer when gocql reported on the host first; plus, per restarted node, at
	// most one for a gocql HostDown that arrived before any evidence newer than the host's last
	// UP (held and settled by a probe: seen once in the ungoverned process, 5 probes where the
	// adoption made 4). The governor passes them.
	maxProbes := len(ips) - 1 + len(ips)
	assert.LessOrEqual(t, gd.probes, maxProbes, "governed probes: one per other host, one per held HostDown, at most")
	assert.LessOrEqual(t, ud.probes, maxProbes, "ungoverned probes: one per other host, one per held HostDown, at most")
}

// dialCounts splits a process's dials that reached the network.
type dialCounts struct {
	gocql    int // gocql's (control connection and pools)
	attempts int // our connection's attempts
	probes   int // our reconciliation probes: one per other host when ours is adopted
}

func (d dialCounts) total() int { return d.gocql + d.attempts + d.probes }

// processDials counts p's dials within [from, to). Every dial of the process that reached the
// network is counted at its Dialer, gocql's told from ours by the dialling stack (what the
// governor refused never reaches it); our attempts' are those our Observer saw; the rest of
// ours are our probes.
func processDials(p *governedProcess, from, to time.Time) dialCounts {
	c, a := p.dials.In(from, to), p.attempt.In(from, to)
	return dialCounts{gocql: c.GocqlControl + c.GocqlPool, attempts: a, probes: c.Ours - a}
}
