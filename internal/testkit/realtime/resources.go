package realtime

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// Resources is what a long run must not grow: the process's goroutines, its open file
// descriptors (-1 where /proc/self/fd cannot be read) and its live heap after a collection.
type Resources struct {
	Goroutines, FDs int
	Heap            uint64 // bytes in use after runtime.GC
}

// Measure collects garbage and reads the process's resources.
func Measure() Resources {
	fds := -1
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = len(entries)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Resources{Goroutines: runtime.NumGoroutine(), FDs: fds, Heap: ms.HeapAlloc}
}

func (r Resources) String() string {
	return fmt.Sprintf("%d goroutines, %d fds, %.1f MiB heap", r.Goroutines, r.FDs, float64(r.Heap)/(1<<20))
}

// Growth bounds how far Resources may grow over a baseline: Slack more goroutines and more
// file descriptors (pools and probes come and go, a leak only grows), HeapSlack more bytes of
// live heap (zero: the heap is not bounded).
type Growth struct {
	Slack     int
	HeapSlack uint64
}

// Within reports whether r is within g of base.
func (r Resources) Within(base Resources, g Growth) bool {
	return r.Goroutines <= base.Goroutines+g.Slack && r.FDs <= base.FDs+g.Slack &&
		(g.HeapSlack == 0 || r.Heap <= base.Heap+g.HeapSlack)
}

// BackToBaseline polls Measure until it is within g of base, and fails t if within passes
// first; it returns the last measurement.
func BackToBaseline(t testing.TB, base Resources, g Growth, within time.Duration) Resources {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		now := Measure()
		if now.Within(base, g) {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back to baseline (%v, growth %+v) within %v: %v", base, g, within, now)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
