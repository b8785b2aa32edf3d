package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Limited plans (blind attempts after the first of a recovery): a bounded number of known
// hosts, rotating through the cluster, the evidenced host on top.

func downHosts(n int) []PlanHost {
	hosts := make([]PlanHost, n)
	for i := range hosts {
		hosts[i] = host(fmt.Sprintf("h%d", i+1), fmt.Sprintf("10.0.0.%d:9042", i+1), "", BeliefUp)
	}
	return hosts
}

// failAll records a failed dial of every endpoint, 1 ms apart from at, in plan order (as a
// plan of refusing hosts is dialled).
func failAll(p *Planner, eps []Endpoint, at time.Time) {
	for i, ep := range eps {
		p.DialFailed(ep.Addr, at.Add(time.Duration(i)*time.Millisecond))
	}
}

// A full outage of 7 nodes: the first attempt (no limit) dials the 7; every later one dials
// BlindAttemptHosts of them, the least recently failed first, so every host is dialled again
// within ceil(7/2) = 4 attempts, and no host twice before every other once.
func TestPlanLimitedRotatesThroughTheCluster(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := downHosts(7)
	first := p.View().Plan(t0, PlanInput{Hosts: hosts})
	require.Len(t, first.Endpoints, 7, "the first sweep dials every host")
	failAll(p, first.Endpoints, t0)

	var got [][]string
	at := t0
	for range 8 {
		at = at.Add(time.Second)
		plan := p.View().Plan(at, PlanInput{Hosts: hosts, Limit: BlindAttemptHosts})
		require.Len(t, plan.Endpoints, BlindAttemptHosts)
		got = append(got, addrs(plan.Endpoints))
		failAll(p, plan.Endpoints, at)
	}
	assert.Equal(t, [][]string{
		{"10.0.0.1:9042", "10.0.0.2:9042"},
		{"10.0.0.3:9042", "10.0.0.4:9042"},
		{"10.0.0.5:9042", "10.0.0.6:9042"},
		{"10.0.0.7:9042", "10.0.0.1:9042"},
		{"10.0.0.2:9042", "10.0.0.3:9042"},
		{"10.0.0.4:9042", "10.0.0.5:9042"},
		{"10.0.0.6:9042", "10.0.0.7:9042"},
		{"10.0.0.1:9042", "10.0.0.2:9042"},
	}, got)
}

// The cost of a limited plan does not depend on the cluster's size.
func TestPlanLimitedCostIsIndependentOfClusterSize(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 12, 100} {
		p := NewPlanner(nil, time.Second, 30*time.Second, nil)
		hosts := downHosts(n)
		failAll(p, p.View().Plan(t0, PlanInput{Hosts: hosts}).Endpoints, t0)
		plan := p.View().Plan(t0.Add(time.Second), PlanInput{Hosts: hosts, Limit: BlindAttemptHosts})
		assert.Len(t, plan.Endpoints, min(n, BlindAttemptHosts), "%d hosts", n)
	}
}

// The evidenced host comes first and on top of the limit, however recently it failed.
func TestPlanLimitedEvidencedHostFirstAndAlways(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := downHosts(5)
	failAll(p, p.View().Plan(t0, PlanInput{Hosts: hosts}).Endpoints, t0)
	p.DialFailed("10.0.0.4:9042", t0.Add(time.Second)) // the most recent failure of all
	plan := p.View().Plan(t0.Add(2*time.Second), PlanInput{Hint: "h4", Hosts: hosts, Limit: BlindAttemptHosts})
	assert.Equal(t, []string{"10.0.0.4:9042", "10.0.0.1:9042", "10.0.0.2:9042"}, addrs(plan.Endpoints))

	// A hint that names no known host: its address, then the limit.
	plan = p.View().Plan(t0.Add(2*time.Second), PlanInput{Hint: "10.0.0.9", Port: 9042, Hosts: hosts, Limit: BlindAttemptHosts})
	assert.Equal(t, []string{"10.0.0.9:9042", "10.0.0.1:9042", "10.0.0.2:9042"}, addrs(plan.Endpoints))
}

// A flap (a loss soon after connecting continues the recovery, so its next attempt is limited):
// the host just lost is suspected and goes last; hosts that never failed come first, believed
// up before unknown before believed down.
func TestPlanLimitedSuspectLastNeverFailedFirst(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := []PlanHost{
		host("a", "10.0.0.1:9042", "", BeliefUp), // ours, just lost
		host("d", "10.0.0.2:9042", "", BeliefDown),
		host("x", "10.0.0.3:9042", "", BeliefUnknown),
		host("u", "10.0.0.4:9042", "", BeliefUp),
		host("f", "10.0.0.5:9042", "", BeliefUp), // failed a while ago
	}
	p.DialFailed("10.0.0.5:9042", t0)
	p.Suspect("10.0.0.1:9042", t0.Add(time.Minute))
	plan := p.View().Plan(t0.Add(time.Minute), PlanInput{Hosts: hosts, Limit: 4})
	assert.Equal(t, []string{"10.0.0.4:9042", "10.0.0.3:9042", "10.0.0.2:9042", "10.0.0.5:9042"}, addrs(plan.Endpoints))
	plan = p.View().Plan(t0.Add(time.Minute), PlanInput{Hosts: hosts, Limit: 5})
	assert.Equal(t, "10.0.0.1:9042", plan.Endpoints[4].Addr, "the lost host last")

	// Suspecting a host that already has a record keeps its backoff but moves it last.
	p.Suspect("10.0.0.5:9042", t0.Add(2*time.Minute))
	assert.Equal(t, t0.Add(time.Second), p.NextEligible("10.0.0.5:9042"))
	plan = p.View().Plan(t0.Add(2*time.Minute), PlanInput{Hosts: hosts, Limit: 5})
	assert.Equal(t, "10.0.0.5:9042", plan.Endpoints[4].Addr)
}

// In a limited plan, contact points that are known hosts are not brought back by Admit; one
// that is not known is admitted when it never failed (a pod's new IP) and otherwise only once
// its backoff expired.
func TestAdmitLimitedPlan(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	hosts := downHosts(5)
	failAll(p, p.View().Plan(t0, PlanInput{Hosts: hosts}).Endpoints, t0)
	p.DialFailed("10.0.0.8:9042", t0)
	now := t0.Add(500 * time.Millisecond)
	plan := p.View().Plan(now, PlanInput{Hosts: hosts, Limit: BlindAttemptHosts})
	contacts := []Endpoint{{Addr: "10.0.0.3:9042"}, {Addr: "10.0.0.8:9042"}, {Addr: "10.0.0.9:9042", Hostname: "db"}}
	got := plan.Admit(now, contacts, hosts)
	assert.Equal(t, []string{"10.0.0.9:9042"}, addrs(got), "known hosts not re-added, the failed contact point backing off")
	assert.Equal(t, []string{"10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.9:9042"}, addrs(plan.Endpoints))

	now = t0.Add(time.Second) // 10.0.0.8's backoff (1 s) expired
	plan = p.View().Plan(now, PlanInput{Hosts: hosts, Limit: BlindAttemptHosts})
	assert.Equal(t, []string{"10.0.0.8:9042"}, addrs(plan.Admit(now, contacts[:2], hosts)))
}

// Before the first connection there is no known host, and the limit does not apply: every
// contact point is dialled, failed or not, as in an unlimited blind attempt.
func TestPlanLimitWithoutKnownHostsDialsEveryContactPoint(t *testing.T) {
	p := NewPlanner(nil, time.Second, 30*time.Second, noShuffle)
	contacts := []Endpoint{{Addr: "10.0.0.1:9042"}, {Addr: "10.0.0.2:9042"}, {Addr: "10.0.0.3:9042"}}
	failAll(p, contacts, t0)
	now := t0.Add(100 * time.Millisecond)
	plan := p.View().Plan(now, PlanInput{Limit: BlindAttemptHosts})
	require.Empty(t, plan.Endpoints)
	assert.Equal(t, addrs(contacts), addrs(plan.Admit(now, contacts, nil)))
}

// Which attempts are limited: blind ones after the first of a recovery.
func TestPlanLimitOfAttempts(t *testing.T) {
	assert.Zero(t, PlanLimit(reconnect.Attempt{N: 1}), "the first attempt of a recovery sweeps every host")
	assert.Zero(t, PlanLimit(reconnect.Attempt{N: 1, ReArmed: true, Hint: "a"}))
	assert.Zero(t, PlanLimit(reconnect.Attempt{N: 5, ReArmed: true, Hint: "a"}), "re-armed attempts are left as they are")
	assert.Equal(t, BlindAttemptHosts, PlanLimit(reconnect.Attempt{N: 2}))
	assert.Equal(t, BlindAttemptHosts, PlanLimit(reconnect.Attempt{N: 9, Hint: "a"}), "a blind attempt carrying an earlier hint")
}
