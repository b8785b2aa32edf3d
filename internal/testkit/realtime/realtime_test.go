package realtime

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestQuantileIsNearestRank(t *testing.T) {
	var l Latencies
	for i := 10; i >= 1; i-- { // out of order on purpose
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, time.Millisecond}, {0.5, 5 * time.Millisecond}, {0.51, 6 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {1, 10 * time.Millisecond}} {
		if got := l.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) of 1..10 ms = %v, want %v", c.q, got, c.want)
		}
	}
	if l[0] != 10*time.Millisecond {
		t.Error("Quantile sorted the caller's slice")
	}
	if got := Latencies(nil).Max(); got != 0 {
		t.Errorf("Max of nothing = %v, want 0", got)
	}
}

func TestStringShowsP95FromTwentyAndP99FromAHundredSamples(t *testing.T) {
	l := Latencies{12 * time.Millisecond, 40500 * time.Microsecond}
	if got, want := l.String(), "p50 12.0 ms, max 40.5 ms (n=2)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	var twenty, hundred Latencies
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	twenty = hundred[:20]
	if got, want := twenty.String(), "p50 10.0 ms, p95 19.0 ms, max 20.0 ms (n=20)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := hundred.String(), "p50 50.0 ms, p95 95.0 ms, p99 99.0 ms, max 100.0 ms (n=100)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&b, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := len(b.String()); n != 400 {
		t.Errorf("%d bytes written, want 400", n)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestEventuallyReturnsOnceCondHoldsAndFailsAfterWithin(t *testing.T) {
	var r fatalRecorder
	calls := 0
	Eventually(&r, time.Second, func() bool { calls++; return calls == 3 }, "third call")
	if r.msg != "" || calls != 3 {
		t.Fatalf("cond true on its third call: %d calls, failure %q", calls, r.msg)
	}
	start := time.Now()
	Eventually(&r, 100*time.Millisecond, func() bool { return r.msg != "" }, "never")
	if r.msg != "not within 100ms: never" {
		t.Errorf("failure %q, want %q", r.msg, "not within 100ms: never")
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("gave up after %v, before within passed", waited)
	}
}
