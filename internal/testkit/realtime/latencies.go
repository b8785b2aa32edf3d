package realtime

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Latencies are measured durations, summarised for t.Logf and assertions.
type Latencies []time.Duration

// Quantile is the nearest-rank quantile: the smallest sample with at least q of the samples at
// or below it (so with fewer than 100 samples p99 is the largest: say Max). Zero when empty.
func (l Latencies) Quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Max is the largest sample (zero when empty).
func (l Latencies) Max() time.Duration { return l.Quantile(1) }

// String gives p50 and max in milliseconds, p95 from 20 samples on and p99 from 100 (below,
// each is the max): "p50 12.0 ms, max 40.5 ms (n=10)".
func (l Latencies) String() string {
	tail := ""
	if len(l) >= 20 {
		tail += ", p95 " + Millis(l.Quantile(0.95))
	}
	if len(l) >= 100 {
		tail += ", p99 " + Millis(l.Quantile(0.99))
	}
	return "p50 " + Millis(l.Quantile(0.5)) + tail + ", max " + Millis(l.Max()) + " (n=" + strconv.Itoa(len(l)) + ")"
}

// Millis formats d in milliseconds with one decimal: "12.3 ms".
func Millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}
