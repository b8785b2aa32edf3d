package dialgate

import (
	"testing"
	"time"
)

// The decision alone: a dial to a host known up while our connection is up (Admit + Done),
// what every gocql dial pays inside the governed dialer (controlconn's
// BenchmarkGovernedDialUpHost).
func BenchmarkDialGateAdmitUpHost(b *testing.B) {
	gate := New(testConfig, nil)
	now := time.Now()
	gate.Done(now, hostA, Pool, true, false)
	b.ReportAllocs()
	for b.Loop() {
		if v := gate.Admit(now, hostA, Pool); v != VerdictPass {
			b.Fatal(v)
		}
		gate.Done(now, hostA, Pool, true, false)
	}
}
