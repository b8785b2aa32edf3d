package plan

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Endpoint is the endpoint type of the plans, short for the tests.
type Endpoint = cqlconn.Endpoint

func noShuffle(int, func(i, j int)) {}

func reverseShuffle(n int, swap func(i, j int)) {
	for i := 0; i < n/2; i++ {
		swap(i, n-1-i)
	}
}

func host(id, addr, dc string, b Belief) PlanHost {
	return PlanHost{Endpoint: Endpoint{Addr: addr, HostID: id, DC: dc}, Belief: b}
}

func addrs(eps []Endpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.Addr
	}
	return out
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPlanOrder(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{
		host("d1", "10.0.0.1:9042", "dc1", BeliefDown),
		host("u1", "10.0.0.2:9042", "dc2", BeliefUp),
		host("x1", "10.0.0.3:9042", "dc1", BeliefUnknown),
		host("u2", "10.0.0.4:9042", "dc1", BeliefUp),
		host("e1", "10.0.0.5:9042", "dc1", BeliefDown),
	}
	plan := p.View().Plan(t0, PlanInput{Hint: "e1", Hosts: hosts, LocalDC: "dc1"})
	assert.Equal(t, []string{
		"10.0.0.5:9042", // evidenced, although believed down
		"10.0.0.4:9042", // up, local DC
		"10.0.0.2:9042", // up, remote DC
		"10.0.0.3:9042", // unknown
		"10.0.0.1:9042", // down, no failed dial on record
	}, addrs(plan.Endpoints))

	// Without a local DC, up hosts keep the shuffled order.
	plan = p.View().Plan(t0, PlanInput{Hosts: hosts[:4]})
	assert.Equal(t, []string{"10.0.0.2:9042", "10.0.0.4:9042", "10.0.0.3:9042", "10.0.0.1:9042"}, addrs(plan.Endpoints))
}

func TestPlanShufflesUpHosts(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, reverseShuffle)
	hosts := []PlanHost{
		host("a", "10.0.0.1:9042", "dc1", BeliefUp),
		host("b", "10.0.0.2:9042", "dc1", BeliefUp),
		host("c", "10.0.0.3:9042", "dc1", BeliefUp),
	}
	plan := p.View().Plan(t0, PlanInput{Hosts: hosts})
	assert.Equal(t, []string{"10.0.0.3:9042", "10.0.0.2:9042", "10.0.0.1:9042"}, addrs(plan.Endpoints))

	// Real shuffle: over many plans every up host comes first at least once.
	p = NewPlanner(nil, time.Second, 30*time.Second, nil)
	firsts := map[string]bool{}
	for range 200 {
		firsts[p.View().Plan(t0, PlanInput{Hosts: hosts}).Endpoints[0].Addr] = true
	}
	assert.Len(t, firsts, 3)
}

func TestPlanHintByAddress(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{host("a", "10.0.0.1:9042", "", BeliefUp), host("b", "10.0.0.2:9042", "", BeliefUp)}
	assert.Equal(t, "10.0.0.2:9042", p.View().Plan(t0, PlanInput{Hint: "10.0.0.2", Hosts: hosts}).Endpoints[0].Addr)
	assert.Equal(t, "10.0.0.2:9042", p.View().Plan(t0, PlanInput{Hint: "10.0.0.2:9042", Hosts: hosts}).Endpoints[0].Addr)
	// An unknown address is dialled first too, with the configured port.
	plan := p.View().Plan(t0, PlanInput{Hint: "10.0.0.9", Hosts: hosts, Port: 9042})
	assert.Equal(t, []string{"10.0.0.9:9042", "10.0.0.1:9042", "10.0.0.2:9042"}, addrs(plan.Endpoints))
	// An unknown host ID is ignored.
	assert.Len(t, p.View().Plan(t0, PlanInput{Hint: "zzz", Hosts: hosts}).Endpoints, 2)
}

// A known-down host is dialled at most once per its own backoff: 1 s, 2 s, 4 s, ... up to the max.
func TestPlanDownHostBackoff(t *testing.T) {
	p := NewPlanner(nil, time.Second, 4*time.Second, noShuffle)
	hosts := []PlanHost{host("a", "10.0.0.1:9042", "", BeliefUp), host("d", "10.0.0.2:9042", "", BeliefUp)}
	in := PlanInput{Hosts: hosts, ReArmed: true}

	p.DialFailed("10.0.0.2:9042", t0)
	at := func(d time.Duration) []string { return addrs(p.View().Plan(t0.Add(d), in).Endpoints) }
	assert.Equal(t, []string{"10.0.0.1:9042"}, at(999*time.Millisecond), "at 999 ms still backing off")
	assert.Equal(t, []string{"10.0.0.1:9042", "10.0.0.2:9042"}, at(time.Second), "at 1000 ms eligible again, after the up host")

	p.DialFailed("10.0.0.2:9042", t0.Add(time.Second))
	assert.NotContains(t, at(2999*time.Millisecond), "10.0.0.2:9042")
	assert.Contains(t, at(3*time.Second), "10.0.0.2:9042", "second failure: 2 s")

	p.DialFailed("10.0.0.2:9042", t0.Add(3*time.Second))
	p.DialFailed("10.0.0.2:9042", t0.Add(7*time.Second))
	assert.Equal(t, t0.Add(11*time.Second), p.NextEligible("10.0.0.2:9042"), "fourth failure: capped at 4 s")

	// Evidence clears the backoff, by host ID.
	p.Evidence("d", hosts, t0)
	assert.Contains(t, at(7*time.Second), "10.0.0.2:9042")
	// So does a successful dial.
	p.DialFailed("10.0.0.2:9042", t0)
	p.DialSucceeded("10.0.0.2:9042")
	assert.Equal(t, time.Time{}, p.NextEligible("10.0.0.2:9042"))
}

func TestPlanHintIgnoresBackoff(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{host("a", "10.0.0.1:9042", "", BeliefDown)}
	p.DialFailed("10.0.0.1:9042", t0)
	assert.Equal(t, []string{"10.0.0.1:9042"}, addrs(p.View().Plan(t0, PlanInput{Hint: "a", Hosts: hosts, ReArmed: true}).Endpoints))
}

// Blind attempts dial every known host, backoff or not: the schedule is their backoff, and
// skipping a host there could make recovery later than DelayCap.
func TestPlanBlindAttemptIgnoresDownBackoff(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{host("a", "10.0.0.1:9042", "", BeliefUp), host("d", "10.0.0.2:9042", "", BeliefUp)}
	for range 5 {
		p.DialFailed("10.0.0.2:9042", t0) // backing off 16 s
	}
	plan := p.View().Plan(t0.Add(time.Second), PlanInput{Hosts: hosts})
	assert.Equal(t, []string{"10.0.0.1:9042", "10.0.0.2:9042"}, addrs(plan.Endpoints), "down host last, but dialled")
	got := plan.Admit(t0.Add(time.Second), []Endpoint{{Addr: "10.0.0.8:9042"}}, hosts)
	assert.Equal(t, []string{"10.0.0.8:9042"}, addrs(got))
}

func TestAdmitContactPoints(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{host("a", "10.0.0.1:9042", "", BeliefUp)}
	p.DialFailed("10.0.0.8:9042", t0)
	plan := p.View().Plan(t0, PlanInput{Hosts: hosts, ReArmed: true})
	p.DialFailed("10.0.0.7:9042", t0) // after the plan: its attempt judges by the records it was made from
	contacts := []Endpoint{{Addr: "10.0.0.1:9042"}, {Addr: "10.0.0.7:9042", Hostname: "db"}, {Addr: "10.0.0.8:9042"}}
	got := plan.Admit(t0, contacts, hosts)
	assert.Equal(t, []string{"10.0.0.7:9042"}, addrs(got), "known address deduplicated, failed contact point backing off")
	assert.Equal(t, []string{"10.0.0.1:9042", "10.0.0.7:9042"}, addrs(plan.Endpoints))
}

// When every candidate is backing off, the longest-waiting one is dialled anyway: an attempt
// never dials nothing.
func TestAdmitForcesLongestWaitingWhenAllBackingOff(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{host("a", "10.0.0.1:9042", "", BeliefDown), host("b", "10.0.0.2:9042", "", BeliefDown)}
	p.DialFailed("10.0.0.1:9042", t0)
	p.DialFailed("10.0.0.1:9042", t0) // 2 s
	p.DialFailed("10.0.0.2:9042", t0) // 1 s
	plan := p.View().Plan(t0.Add(500*time.Millisecond), PlanInput{Hosts: hosts, ReArmed: true})
	require.Empty(t, plan.Endpoints)
	got := plan.Admit(t0.Add(500*time.Millisecond), []Endpoint{{Addr: "10.0.0.1:9042"}}, hosts)
	assert.Equal(t, []string{"10.0.0.2:9042"}, addrs(got))
}

func TestResolveContactPoints(t *testing.T) {
	calls := 0
	res := func(_ context.Context, h string) ([]net.IP, error) {
		calls++
		switch h {
		case "db.example":
			return []net.IP{net.ParseIP("::1"), net.ParseIP("10.1.0.1"), net.ParseIP("10.1.0.2")}, nil
		case "v6only":
			return []net.IP{net.ParseIP("fd00::1")}, nil
		}
		return nil, errors.New("no such host")
	}
	eps, err := ResolveContactPoints(context.Background(),
		[]string{"10.0.0.1", "10.0.0.2:9999", "db.example", "v6only", "gone.example"}, 9042, res)
	assert.ErrorContains(t, err, "no such host")
	assert.Equal(t, []string{"10.0.0.1:9042", "10.0.0.2:9999", "10.1.0.1:9042", "10.1.0.2:9042", "[fd00::1]:9042"}, addrs(eps))
	assert.Equal(t, "db.example", eps[2].Hostname)
	assert.Equal(t, 3, calls, "IP contact points are not looked up")

	// Re-resolved every time: a new IP shows up.
	res2 := func(context.Context, string) ([]net.IP, error) { return []net.IP{net.ParseIP("10.9.9.9")}, nil }
	eps, err = ResolveContactPoints(context.Background(), []string{"db.example"}, 9042, res2)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.9.9.9:9042"}, addrs(eps))
}
