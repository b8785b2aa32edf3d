package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// The login load (-login-load) asks what a return served at a given pace costs a client that is
// already served, on this machine, with no fleet and no fault: the canary queries the node while
// the coordinator logs in at a share of the idle floor, one share after another. A fleet's return
// served within 1.3× the serving floor (issue 27) has the node checking logins at no less than
// 1 ÷ 1.3 of its floor throughout; the canary's p99 beside that pace is then the least its
// return p99 can be.

// loadConc bounds the paced logins in flight: a tick that finds this many in flight is skipped
// (counted), so a node slower than the pace is offered a bounded queue, not an unbounded one.
const loadConc = 16

// The defaults of -load-window and -load-warm: the windows the measurements in docs/fleet.md used.
const (
	loadWindowDefault = 40 * time.Second
	loadWarmDefault   = 2 * time.Minute
)

// LoginLoad is the canary beside logins paced at one share of the idle floor.
type LoginLoad struct {
	Cost  int     `json:"bcrypt_cost"`
	Share float64 `json:"floor_share"`
	// OfferedPerS is the pace (the share of the floor), LoginsPerS the logins that succeeded
	// per second of the window; Failed and Skipped (ticks with loadConc in flight) count the rest.
	OfferedPerS float64 `json:"offered_logins_per_s"`
	LoginsPerS  float64 `json:"logins_per_s"`
	Failed      int     `json:"failed"`
	Skipped     int     `json:"skipped"`
	// The canary alone over the window before the first share (steady) and after the last
	// (after), and over this share's window.
	SteadyP50Ms float64 `json:"canary_steady_p50_ms"`
	SteadyP99Ms float64 `json:"canary_steady_p99_ms"`
	AfterP50Ms  float64 `json:"canary_after_p50_ms"`
	AfterP99Ms  float64 `json:"canary_after_p99_ms"`
	P50Ms       float64 `json:"canary_p50_ms"`
	P99Ms       float64 `json:"canary_p99_ms"`
	Queries     int     `json:"canary_queries"`
	Errors      int     `json:"canary_errors"`
	// ServerCPUPerS is the node's CPU seconds per second of the window (the machine has
	// Machine.CPUs of them).
	ServerCPUPerS float64 `json:"server_cpu_per_s"`
	WindowS       float64 `json:"window_s"`
	// WarmS is how long the canary queried before its steady window (its query path warms up).
	WarmS float64 `json:"canary_warm_s"`
	// BackgroundQPS is the steady query load beside the canary throughout (-load-qps): the
	// canary's query from one more session, at this rate, as a fleet's served clients query.
	BackgroundQPS int `json:"background_qps,omitempty"`
	// LastError is the last failed login's error, if any failed.
	LastError string `json:"last_error,omitempty"`
}

// line is one share in words.
func (l LoginLoad) line() string {
	ratio := "–"
	if l.SteadyP99Ms > 0 {
		ratio = fmt.Sprintf("%.1f×", l.P99Ms/l.SteadyP99Ms)
	}
	if l.BackgroundQPS > 0 {
		ratio += fmt.Sprintf(", beside %d queries/s throughout", l.BackgroundQPS)
	}
	failed := ""
	if l.LastError != "" {
		failed = fmt.Sprintf(" (the last: %s)", l.LastError)
	}
	return fmt.Sprintf("logins paced at %.2f of the floor (%.1f/s offered): %.1f/s checked, %d failed%s, %d ticks skipped; the node's CPU %.2f s/s; canary p50 / p99 %.2f / %.2f ms (alone before %.2f / %.2f ms, p99 %s; after %.2f / %.2f ms), %d of %d queries failed",
		l.Share, l.OfferedPerS, l.LoginsPerS, l.Failed, failed, l.Skipped, l.ServerCPUPerS, l.P50Ms, l.P99Ms, l.SteadyP50Ms, l.SteadyP99Ms, ratio,
		l.AfterP50Ms, l.AfterP99Ms, l.Errors, l.Queries)
}

// loginLoadLines is the login loads by cost, under the table.
func loginLoadLines(loads map[string][]LoginLoad) string {
	var b strings.Builder
	for _, c := range sortedKeys(loads) {
		for _, l := range loads[c] {
			fmt.Fprintf(&b, "Login load at bcrypt cost %s: %s\n", c, l.line())
		}
	}
	return b.String()
}

// validLoginLoad accepts -login-load's shares: none, or each in (0, 2], on one node, not with
// -return-floor (each replaces the lanes).
func validLoginLoad(shares []float64, nodes, returnSamples int) error {
	for _, s := range shares {
		if !(s > 0 && s <= 2) {
			return fmt.Errorf("-login-load %v: want shares of the floor in (0, 2]", s)
		}
	}
	switch {
	case len(shares) > 0 && nodes != 1:
		return fmt.Errorf("-login-load with -nodes %d: the login load is measured on one node", nodes)
	case len(shares) > 0 && returnSamples > 0:
		return fmt.Errorf("-login-load with -return-floor: run one, then the other")
	}
	return nil
}

// parseShares parses -login-load's comma-separated shares.
func parseShares(s string) ([]float64, error) {
	var out []float64
	for _, f := range split(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("-login-load %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// pacedLogins starts one login every 1/rate seconds until ctx ends, unless conc are in flight
// (then the tick is skipped), and waits for those in flight. It returns the logins that
// succeeded, failed, the ticks skipped and the last failure. A login that ends at or after
// ctx's end (cut by it) counts as neither.
func pacedLogins(ctx context.Context, rate float64, conc int, login func(context.Context) error) (ok, failed, skipped int, lastErr error) {
	var nOK, nFailed atomic.Int64
	var last atomic.Value
	var inflight atomic.Int64
	var wg sync.WaitGroup
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		if inflight.Load() >= int64(conc) {
			skipped++
		} else {
			inflight.Add(1)
			wg.Go(func() {
				defer inflight.Add(-1)
				err := login(ctx)
				switch {
				case ctx.Err() != nil, ended(ctx):
					// Cut by the window's end (a socket deadline at it may fire first).
				case err != nil:
					nFailed.Add(1)
					last.Store(err)
				default:
					nOK.Add(1)
				}
			})
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			lastErr, _ = last.Load().(error)
			return int(nOK.Load()), int(nFailed.Load()), skipped, lastErr
		case <-t.C:
		}
	}
}

// ended reports whether ctx's deadline has passed, even if its timer has not fired yet.
func ended(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// measureLoginLoads runs the canary (beside p.loadQPS queries a second of another session, if
// set) on the node for p.loadWarm (its query path warms up)
// and p.loadWindow (its steady state), then beside logins paced at each of p.loadShares of floor
// (logins/s) for p.loadWindow each, then without logins again for p.loadWindow, into
// res.LoginLoads[cost].
func measureLoginLoads(c *realcluster.Cluster, p plan, cost int, floor float64, res *Results) error {
	if p.loadQPS > 0 {
		// The background load is a canary whose samples are not read.
		bg, err := startCanary(canaryConfig(c.Hosts(), c.Port(), user, password), time.Second/time.Duration(p.loadQPS))
		if err != nil {
			return err
		}
		defer bg.close()
	}
	cn, err := startCanary(canaryConfig(c.Hosts(), c.Port(), user, password), p.canaryEvery)
	if err != nil {
		return err
	}
	defer cn.close()
	if err := cn.awaitServing(canaryConnectWithin); err != nil {
		return err
	}
	time.Sleep(time.Second + p.loadWarm) // the canary's pool fills just after its first query
	steadyFrom := time.Now()
	time.Sleep(p.loadWindow)
	steadyTo := time.Now()
	type window struct {
		from, to         time.Time
		ok, failed, skip int
		cpu              time.Duration
		lastErr          error
	}
	var windows []window
	addr := c.Node(0).Addr()
	one := func(ctx context.Context) error {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return login(lctx, addr, user, password)
	}
	for _, share := range p.loadShares {
		ctx, cancel := context.WithTimeout(context.Background(), p.loadWindow)
		cpu0, from := serverCPU(c), time.Now()
		ok, failed, skip, lastErr := pacedLogins(ctx, share*floor, loadConc, one)
		cancel()
		windows = append(windows, window{from: from, to: time.Now(), ok: ok, failed: failed, skip: skip, cpu: serverCPU(c) - cpu0, lastErr: lastErr})
		time.Sleep(2 * time.Second) // the node's queue drains before the next share
	}
	afterFrom := time.Now()
	time.Sleep(p.loadWindow)
	samples := cn.close()
	steady, after := canaryWindow(samples, steadyFrom, steadyTo), canaryWindow(samples, afterFrom, time.Now())
	key := strconv.Itoa(cost)
	res.LoginLoads[key] = nil
	for i, w := range windows {
		secs := w.to.Sub(w.from).Seconds()
		st := canaryWindow(samples, w.from, w.to)
		l := LoginLoad{Cost: cost, Share: p.loadShares[i], OfferedPerS: math.Round(p.loadShares[i]*floor*10) / 10,
			LoginsPerS: math.Round(float64(w.ok)/secs*10) / 10, Failed: w.failed, Skipped: w.skip,
			SteadyP50Ms: round2(steady.P50Ms), SteadyP99Ms: round2(steady.P99Ms), AfterP50Ms: round2(after.P50Ms), AfterP99Ms: round2(after.P99Ms),
			P50Ms: round2(st.P50Ms), P99Ms: round2(st.P99Ms), Queries: st.Queries, Errors: st.Errors,
			ServerCPUPerS: round2(w.cpu.Seconds() / secs), WindowS: round2(secs), WarmS: p.loadWarm.Seconds(), BackgroundQPS: p.loadQPS}
		if w.lastErr != nil {
			l.LastError = w.lastErr.Error()
		}
		res.LoginLoads[key] = append(res.LoginLoads[key], l)
		fmt.Fprintf(os.Stderr, "login load at bcrypt cost %d: %s\n", cost, l.line())
	}
	return nil
}
