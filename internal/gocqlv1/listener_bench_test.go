package gocqlv1

import (
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// drain reads batches until the hostevents.Queue is closed, as the control connection would.
func drain(q *hostevents.Queue) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range q.Batches() {
		}
	}()
	return done
}

// BenchmarkListenerHostUp is the cost the wrapper adds on gocql's goroutine per HostUp, in the
// steady state (64 hosts already seen, a consumer draining batches). inner=noop isolates the
// wrapper; inner=roundrobin adds gocql's own policy (which allocates on every HostUp).
func BenchmarkListenerHostUp(b *testing.B) {
	for _, bc := range []struct {
		name     string
		inner    func() gocql.HostSelectionPolicy
		parallel bool
	}{
		{"inner=noop", func() gocql.HostSelectionPolicy { return noopPolicy{} }, false},
		{"inner=noop/parallel", func() gocql.HostSelectionPolicy { return noopPolicy{} }, true},
		{"inner=roundrobin", gocql.RoundRobinHostPolicy, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := hostevents.NewQueue(hostevents.QueueConfig{})
			if err != nil {
				b.Fatal(err)
			}
			drained := drain(q)
			w := Wrap(bc.inner(), q)
			hosts := make([]*gocql.HostInfo, 64)
			for i := range hosts {
				hosts[i] = host(i)
				w.HostUp(hosts[i])
			}
			b.ReportAllocs()
			b.ResetTimer()
			if bc.parallel {
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						w.HostUp(hosts[i&63])
					}
				})
			} else {
				for i := 0; b.Loop(); i++ {
					w.HostUp(hosts[i&63])
				}
			}
			b.StopTimer()
			_ = q.Close()
			<-drained
		})
	}
}

// BenchmarkQueueBurst10k pushes 10,000 events over 1,000 hosts and receives the batches they
// collapse into. The window is shortened to 100µs (MaxWait 1ms) so that the figure is the
// queue's work rather than the default 50ms of waiting.
func BenchmarkQueueBurst10k(b *testing.B) {
	const events, hosts = 10_000, 1_000
	q, err := hostevents.NewQueue(hostevents.QueueConfig{Window: 100 * time.Microsecond, MaxWait: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = q.Close() }()
	ids := make([]string, hosts)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	var (
		received, batches, iters int
		push                     time.Duration
	)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		for i := range events {
			q.Push(hostevents.Event{HostID: ids[i%hosts], Kind: hostevents.Kind(1 + i%4), Source: hostevents.SourceGocql})
		}
		push += time.Since(start)
		s := q.Stats()
		target := int(s.Received - s.Coalesced - s.Dropped - s.Recorded)
		for received < target {
			received += len(<-q.Batches())
			batches++
		}
		iters++
	}
	b.ReportMetric(float64(push.Nanoseconds())/float64(iters*events), "push-ns/event")
	b.ReportMetric(float64(batches)/float64(iters), "batches/op")
}

// BenchmarkQueueRecord is the cost of counting an event without queueing it (the control
// connection's own server events), with an observer as metrics would have one.
func BenchmarkQueueRecord(b *testing.B) {
	q, err := hostevents.NewQueue(hostevents.QueueConfig{Observer: hostevents.NopQueueObserver{}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = q.Close() }()
	e := hostevents.Event{HostID: "00000000-0000-4000-8000-000000000001", Kind: hostevents.KindUp, Source: hostevents.SourceControl}
	b.ReportAllocs()
	for b.Loop() {
		q.Record(e)
	}
}
