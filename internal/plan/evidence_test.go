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
		indexed := NewPlanner(time.Second, time.Minute, noShuffle)
		scanned := map[string]bool{}
		for _, h := range hosts {
			indexed.DialFailed(h.Addr, t0)
			scanned[h.Addr] = true
		}
		indexed.Evidence(hint, hosts)
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
