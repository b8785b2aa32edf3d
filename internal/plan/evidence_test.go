package plan

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// manyHosts is n distinct known-down hosts 10.x.y.z:9042 with host IDs.
func manyHosts(n int) []PlanHost {
	hosts := make([]PlanHost, n)
	for i := range n {
		ip := net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)).To4()
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		hosts[i] = host(id, net.JoinHostPort(ip.String(), "9042"), "dc1", BeliefDown)
	}
	return hosts
}

// The indexed Evidence forgets exactly the hosts the scan of matchesHint would: by host ID
// (any case), by bare IP (every port), by address.
func TestEvidenceIndexMatchesScan(t *testing.T) {
	hosts := manyHosts(100)
	hosts = append(hosts, host("", "10.0.0.5:9043", "dc1", BeliefDown)) // same IP, other port
	hints := []string{hosts[7].HostID, "00000000-0000-4000-8000-000000000042", "10.0.0.5", "10.0.0.9:9042", "::ffff:10.0.0.11", "nobody", ""}
	for _, hint := range hints {
		indexed := NewPlanner(nil, time.Second, time.Minute, noShuffle)
		scanned := map[string]bool{}
		for _, h := range hosts {
			indexed.DialFailed(h.Addr, t0)
			scanned[h.Addr] = true
		}
		indexed.Evidence(hint, hosts, t0)
		delete(scanned, hint)
		for _, h := range hosts {
			if matchesHint(h.Endpoint, hint) {
				delete(scanned, h.Addr)
			}
		}
		for _, h := range hosts {
			assert.Equal(t, scanned[h.Addr], !indexed.NextEligible(h.Addr).IsZero(), "hint %q, host %s", hint, h.Addr)
		}
	}
}

// The outcomes of an attempt's dials are recorded when it ends: a failure from before evidence
// that arrived meanwhile is stale, one from after it stands, and once the attempt has ended
// nothing is remembered of the evidence.
func TestFailureReportedAfterNewerEvidenceIsStale(t *testing.T) {
	p := NewPlanner(nil, time.Second, time.Minute, noShuffle)
	a, b := "10.0.0.1:9042", "10.0.0.2:9042"
	p.View() // an attempt starts
	p.Evidence(a, nil, t0.Add(time.Second))
	p.Evidence(b, nil, t0.Add(time.Second))
	p.DialFailed(a, t0)                            // dialled before the evidence
	p.DialFailed(b, t0.Add(1500*time.Millisecond)) // after it
	p.AttemptEnded()
	assert.True(t, p.NextEligible(a).IsZero(), "a failure older than the evidence is stale")
	assert.Equal(t, t0.Add(2500*time.Millisecond), p.NextEligible(b), "a failure newer than the evidence stands")
	p.DialFailed(a, t0)
	assert.False(t, p.NextEligible(a).IsZero(), "after the attempt, the evidence is forgotten")
}

// Retain forgets the records of addresses the cluster no longer has.
func TestRetainForgetsRecords(t *testing.T) {
	p := NewPlanner(nil, time.Second, time.Minute, noShuffle)
	for i := range 10 {
		p.DialFailed(fmt.Sprintf("10.0.0.%d:9042", i), t0)
	}
	p.Retain(func(addr string) bool { return addr == "10.0.0.3:9042" })
	assert.Equal(t, 1, p.Records())
	assert.False(t, p.NextEligible("10.0.0.3:9042").IsZero())
}
