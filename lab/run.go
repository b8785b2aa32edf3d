package lab

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Run simulates every strategy over every outage length of cfg (zero fields mean their
// defaults) and checks the lab's claims. It is deterministic given cfg, and returns early with
// ctx's error if ctx is done.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	ss := strategies(cfg)
	res := &Result{Model: model(cfg), Config: settings(cfg)}
	for _, s := range ss {
		res.Strategies = append(res.Strategies, s.StrategyInfo)
	}
	res.Strategies = append(res.Strategies, governedInfo(cfg))
	for li, length := range cfg.Outages {
		rows, err := runOutage(ctx, cfg, ss, li, length)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, rows...)
	}
	res.Checks = checks(cfg, res)
	return res, nil
}

// runOutage runs every strategy at one nominal length: the sampled outages, then the fleet.
// gocql runs first because its reconnection is the evidence the others may be given.
func runOutage(ctx context.Context, cfg Config, ss []strategy, li int, length time.Duration) ([]Row, error) {
	ready := make([]time.Duration, cfg.Samples)
	draw := stream(cfg.Seed, "outage", li, 0)
	lo := 1 - cfg.Spread
	for i := range ready {
		ready[i] = time.Duration(float64(length) * (lo + 2*cfg.Spread*draw.Float64()))
	}
	fleetReady := make([]time.Duration, cfg.Fleet)
	for j := range fleetReady {
		fleetReady[j] = length
	}

	gocql := slices.IndexFunc(ss, func(s strategy) bool { return s.ID == Gocql })
	order := append([]int{gocql}, slices.DeleteFunc(seq(len(ss)), func(i int) bool { return i == gocql })...)
	var sampleEv, fleetEv []time.Duration
	rows := make([]Row, len(ss))
	for _, si := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := ss[si]
		var ev, fev []time.Duration
		if s.usesEvidence {
			ev, fev = sampleEv, fleetEv
		}
		outs, err := runMany(s, "sample/"+s.stream(), cfg, li, ready, ev, nil)
		if err != nil {
			return nil, err
		}
		fr := newFleetRecorder(length)
		fouts, err := runMany(s, "fleet/"+s.stream(), cfg, li, fleetReady, fev, fr)
		if err != nil {
			return nil, err
		}
		if si == gocql {
			sampleEv, fleetEv = evidenceTimes(cfg, outs), evidenceTimes(cfg, fouts)
		}
		rows[si] = summarize(length, s.ID, ready, outs)
		rows[si].Fleet = fr.fleet(fouts, cfg.Histograms)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gov, err := runGoverned(cfg, li, length, ready, fleetReady)
	if err != nil {
		return nil, err
	}
	return append(rows, gov), nil
}

// runMany simulates one client per ready time; ev, when not nil, holds each client's evidence time.
func runMany(s strategy, streamID string, cfg Config, li int, ready, ev []time.Duration, rec recorder) ([]outcome, error) {
	outs := make([]outcome, len(ready))
	for i := range outs {
		c, err := s.newClient(stream(cfg.Seed, streamID, li, i))
		if err != nil {
			return nil, err
		}
		at := noEvidence
		if ev != nil {
			at = ev[i]
		}
		if outs[i], err = simulate(c, ready[i], at, cfg.DialTime, rec); err != nil {
			return nil, fmt.Errorf("%s, outage %v: %w", s.ID, ready[i], err)
		}
	}
	return outs, nil
}

// evidenceTimes turns gocql's reconnections into the times its host events reach us.
func evidenceTimes(cfg Config, gocql []outcome) []time.Duration {
	ev := make([]time.Duration, len(gocql))
	for i, o := range gocql {
		ev[i] = o.connected + cfg.evidenceDelay()
	}
	return ev
}

func summarize(length time.Duration, id string, ready []time.Duration, outs []outcome) Row {
	late := make([]time.Duration, len(outs))
	row := Row{Outage: length.Seconds(), Strategy: id}
	var attempts, dials int
	for i, o := range outs {
		late[i] = o.connected - ready[i]
		attempts += o.attempts
		dials += o.dials
		row.AttemptsMax = max(row.AttemptsMax, o.attempts)
	}
	slices.Sort(late)
	if n := len(late); n > 0 {
		row.P50, row.P99, row.Max = percentile(late, 0.50), percentile(late, 0.99), late[n-1].Seconds()
		row.Attempts, row.Dials = float64(attempts)/float64(n), float64(dials)/float64(n)
	}
	return row
}

// percentile is the nearest-rank percentile of sorted values, in seconds.
func percentile(sorted []time.Duration, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)].Seconds()
}

// fleetRecorder counts a fleet's attempts and dials per second, split at the ready instant.
type fleetRecorder struct {
	ready, lastFrom              time.Duration
	down, downDials, ret, retDia []int
	lastWindow                   int // attempts in [lastFrom, ready)
}

func newFleetRecorder(ready time.Duration) *fleetRecorder {
	return &fleetRecorder{ready: ready, lastFrom: ready - min(time.Minute, ready/2)}
}

func (f *fleetRecorder) attempt(at time.Duration) {
	if at < f.ready && at >= f.lastFrom {
		f.lastWindow++
	}
	f.count(at, &f.down, &f.ret)
}

func (f *fleetRecorder) dial(at time.Duration) { f.count(at, &f.downDials, &f.retDia) }

func (f *fleetRecorder) count(at time.Duration, down, ret *[]int) {
	h, i := down, int(at/time.Second)
	if at >= f.ready {
		h, i = ret, int((at-f.ready)/time.Second)
	}
	if i >= len(*h) {
		*h = append(*h, make([]int, i+1-len(*h))...)
	}
	(*h)[i]++
}

func (f *fleetRecorder) fleet(outs []outcome, keep bool) Fleet {
	fl := Fleet{Clients: len(outs)}
	if len(f.down) > 0 {
		fl.AtLoss = f.down[0]
		fl.PeakDown = peak(f.down[1:])
		fl.PeakDownDials = peak(f.downDials[1:])
	}
	if w := f.ready - f.lastFrom; w > 0 {
		fl.LastMinute = float64(f.lastWindow) / w.Seconds()
	}
	fl.PeakReturn, fl.PeakReturnDials = peak(f.ret), peak(f.retDia)
	for _, o := range outs {
		fl.AllBack = max(fl.AllBack, (o.connected - f.ready).Seconds())
	}
	if keep {
		fl.Down, fl.DownDials, fl.Return, fl.ReturnDials = f.down, f.downDials, f.ret, f.retDia
	}
	return fl
}

func peak(h []int) int {
	if len(h) == 0 {
		return 0
	}
	return slices.Max(h)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// stream is the random source of one simulated client (or of one set of draws): its own PCG
// stream, derived from the seed, a name, the outage index and the client index, so that results
// do not depend on the order in which things are simulated.
func stream(seed uint64, name string, li, i int) *rand.Rand {
	h := uint64(14695981039346656037) // FNV-1a
	for j := 0; j < len(name); j++ {
		h = (h ^ uint64(name[j])) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, mix(h^mix(uint64(li)<<32|uint64(uint32(i))))))
}

// mix is SplitMix64's finalizer: nearby inputs give unrelated streams.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func settings(cfg Config) Settings {
	s := Settings{
		Samples: cfg.Samples, Spread: cfg.Spread, Fleet: cfg.Fleet, Nodes: cfg.Nodes,
		ContactPoints: cfg.ContactPoints, DialTime: cfg.DialTime.Seconds(),
		EvidenceDelay: cfg.evidenceDelay().Seconds(), Seed: cfg.Seed,
		Policy: describePolicy(cfg.Reconnect), DelayCap: cfg.Reconnect.DelayCap.Seconds(),
		MinReArm: cfg.Reconnect.MinReArmInterval.Seconds(), StableAfter: cfg.Reconnect.StableAfter.Seconds(),
		HistogramsKept: cfg.Histograms,
	}
	for _, o := range cfg.Outages {
		s.Outages = append(s.Outages, o.Seconds())
	}
	return s
}
