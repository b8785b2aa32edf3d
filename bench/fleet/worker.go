package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A worker is one OS process of the fleet (GOMAXPROCS=1) holding its share of the clients.
// The coordinator talks to it by lines: on stdin "down" (the fault has happened: setups and
// first successes count from now), "ready" (the node answers CQL again, with several nodes the
// last faulted one: the CPU count starts), "mark" (the server's login counters are about to be
// read: the setups kept so far are noted), "report", "live" (how many clients serve now: their
// latest query succeeded; the coordinator asks before a fault) and "quit"; on stdout one JSON
// object a line (workerLine).

// workerLine is one line a worker prints.
type workerLine struct {
	Ev      string        `json:"ev"`                // "up", "serving", "live", "report", "ours", "error"
	Serving int           `json:"serving,omitempty"` // "serving": clients whose first query after "down" succeeded; "live": clients whose latest query succeeded
	Err     string        `json:"err,omitempty"`
	Report  *workerReport `json:"report,omitempty"`
}

// workerReport is what a worker measured between "down" and "report".
type workerReport struct {
	// FirstOK is each client's first successful query begun after "down", Unix nanoseconds
	// (0: none yet).
	FirstOK []int64 `json:"first_ok"`
	Setups  setups  `json:"setups"`
	// CPU is the worker's user+system CPU time from "ready" to "report".
	CPU time.Duration `json:"cpu_ns"`
	// QueryFailures is the clients' failed queries between "down" and "report".
	QueryFailures int64 `json:"query_failures"`
	// MaxGap is each client's longest time without a successful query over a span that ended
	// after "down" (from its last success before, or the last one at "report" when none came
	// since).
	MaxGap []time.Duration `json:"max_gap_ns"`
	// OursOK is, in an "ours" line, each client's first setup of cqlcontrol's own control
	// connection that succeeded since "down", Unix nanoseconds (0: none yet).
	OursOK []int64 `json:"ours_ok,omitempty"`
	// OursLate is, in an "ours" line, the trace of each client whose own control connection has
	// not set up since "down".
	OursLate []string `json:"ours_late,omitempty"`
	// Unserved is, for each client with no successful query since "down", its trace: its
	// latest setups and the governor's decisions on its dials.
	Unserved []string `json:"unserved,omitempty"`
}

// setups counts connection setups: gocql's (ConnectObserver: dial, STARTUP, AUTH) and
// cqlcontrol's own control connection's dials (its Observer).
type setups struct {
	Started  int64 `json:"started"`
	OK       int64 `json:"ok"`
	Failed   int64 `json:"failed"`
	TimedOut int64 `json:"timed_out"`
	// NotSent is the dials the dial governor refused before sending anything (not in
	// Started: no packet left the client).
	NotSent int64 `json:"not_sent_governor"`
	// OKAtRead is OK when the coordinator was about to read the server's login counters
	// ("mark"): each of those setups' logins is in the server's count, which the setups kept
	// after it (OK − OKAtRead) may or may not be.
	OKAtRead int64            `json:"ok_at_read"`
	ByError  map[string]int64 `json:"by_error,omitempty"`
	// PerSecond is setups ended in each second after "down"; OKPerSecond those that succeeded.
	PerSecond   []int64 `json:"per_second,omitempty"`
	OKPerSecond []int64 `json:"ok_per_second,omitempty"`
}

func (s *setups) add(o setups) {
	s.Started += o.Started
	s.OK += o.OK
	s.Failed += o.Failed
	s.TimedOut += o.TimedOut
	s.NotSent += o.NotSent
	s.OKAtRead += o.OKAtRead
	for k, v := range o.ByError {
		if s.ByError == nil {
			s.ByError = map[string]int64{}
		}
		s.ByError[k] += v
	}
	addSeries(&s.PerSecond, o.PerSecond)
	addSeries(&s.OKPerSecond, o.OKPerSecond)
}

// addSeries adds o to *s second by second, growing *s as needed.
func addSeries(s *[]int64, o []int64) {
	for i, v := range o {
		countAt(s, i, v)
	}
}

// countAt adds v to (*s)[i], growing *s as needed.
func countAt(s *[]int64, i int, v int64) {
	for len(*s) <= i {
		*s = append(*s, 0)
	}
	(*s)[i] += v
}

type worker struct {
	mu    sync.Mutex
	out   *json.Encoder
	set   setups
	since time.Time // "down"; zero before
}

func (w *worker) emit(l workerLine) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.out.Encode(l)
}

var addrRE = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+(:\d+)?|\[[0-9a-f:]+\](:\d+)?`)

// errorText is err's text without addresses, cut short, as setups are counted by it.
func errorText(err error) string {
	s := addrRE.ReplaceAllString(err.Error(), "ADDR")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// setupEnded counts one setup that ended at end with err.
func (w *worker) setupEnded(end time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() || end.Before(w.since) {
		return
	}
	if err != nil && strings.Contains(err.Error(), "nothing sent") {
		w.set.NotSent++
		return
	}
	w.set.Started++
	switch {
	case err == nil:
		w.set.OK++
	case strings.Contains(strings.ToLower(err.Error()), "timeout") || strings.Contains(err.Error(), "deadline"):
		w.set.TimedOut++
	default:
		w.set.Failed++
	}
	if err != nil {
		if w.set.ByError == nil {
			w.set.ByError = map[string]int64{}
		}
		w.set.ByError[errorText(err)]++
	}
	sec := int(end.Sub(w.since) / time.Second)
	countAt(&w.set.PerSecond, sec, 1)
	if err == nil {
		countAt(&w.set.OKPerSecond, sec, 1)
	}
}

// member is one client, its first success after "down", its last success and its longest
// gap between two successes since "down" (Unix nanoseconds, nanoseconds).
type member struct {
	c       client
	tr      trace
	firstOK atomic.Int64
	lastOK  atomic.Int64
	maxGap  atomic.Int64
	live    atomic.Bool // its latest query succeeded
}

// succeeded records a success at now (Unix ns): the gap since the last success counts when
// it ends after "down" (down, Unix ns, 0 when no fault runs).
func (m *member) succeeded(now, down int64) {
	last := m.lastOK.Swap(now)
	if down != 0 && last != 0 && now > down && now-last > m.maxGap.Load() {
		m.maxGap.Store(now - last)
	}
}

// gapAt is the member's longest gap since "down" as of now: the open one counts too.
func (m *member) gapAt(now int64) time.Duration {
	g := m.maxGap.Load()
	if last := m.lastOK.Load(); last != 0 && now-last > g {
		g = now - last
	}
	return time.Duration(g)
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runWorker is the worker's main: n clients of lane on hosts (each client's contact points) at
// port as user/password.
func runWorker(laneName string, hosts []string, port, n int, user, password string, waitEvery, serveEvery time.Duration) error {
	newClient, err := laneByName(laneName)
	if err != nil {
		return err
	}
	if newClient == nil {
		return fmt.Errorf("lane %s runs its workers in a JVM (java/FleetWorker.java), not here", laneName)
	}
	w := &worker{out: json.NewEncoder(os.Stdout)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	members := make([]*member, n)
	// Connect the clients two at a time, each retried until it connects: the start is not
	// what is measured, and a start storm would only slow it.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range members {
		members[i] = &member{}
		wg.Add(1)
		go func(m *member) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for ctx.Err() == nil {
				c, err := newClient(ctx, target{hosts: hosts, port: port, user: user, password: password, w: w, tr: &m.tr})
				if err == nil {
					m.c = c
					return
				}
				fmt.Fprintf(os.Stderr, "connect: %v\n", err)
				time.Sleep(500 * time.Millisecond)
			}
		}(members[i])
	}
	wg.Wait()
	defer func() {
		for _, m := range members {
			m.c.Close()
		}
	}()
	var down atomic.Int64 // Unix ns of "down", 0 before
	var failures atomic.Int64
	var okOnce sync.WaitGroup
	okOnce.Add(n)
	for i, m := range members {
		go func() {
			// Spread the clients' queries over the serving interval.
			time.Sleep(serveEvery * time.Duration(i) / time.Duration(n))
			first := true
			for ctx.Err() == nil {
				begin := time.Now()
				qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
				err := m.c.Query(qctx)
				qcancel()
				m.live.Store(err == nil)
				if err != nil && down.Load() != 0 {
					failures.Add(1)
					m.tr.query(err)
				}
				if err == nil {
					m.succeeded(time.Now().UnixNano(), down.Load())
					if first {
						first = false
						okOnce.Done()
					}
					if d := down.Load(); d != 0 && begin.UnixNano() > d && m.firstOK.Load() == 0 {
						m.firstOK.Store(time.Now().UnixNano())
					}
				}
				every := serveEvery
				if err != nil || (down.Load() != 0 && m.firstOK.Load() == 0) {
					every = waitEvery
				}
				select {
				case <-ctx.Done():
				case <-time.After(every):
				}
			}
		}()
	}
	okOnce.Wait()
	w.emit(workerLine{Ev: "up"})
	var cpu0 time.Duration
	sc := bufio.NewScanner(os.Stdin)
	ticker := make(chan struct{})
	for sc.Scan() {
		switch sc.Text() {
		case "down":
			now := time.Now()
			w.mu.Lock()
			w.set, w.since = setups{}, now
			w.mu.Unlock()
			for _, m := range members {
				m.firstOK.Store(0)
				m.maxGap.Store(0)
				m.tr.reset(now)
			}
			failures.Store(0)
			down.Store(now.UnixNano())
			close(ticker)
			ticker = make(chan struct{})
			go func(stop chan struct{}) {
				t := time.NewTicker(500 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
					}
					k := 0
					for _, m := range members {
						if m.firstOK.Load() != 0 {
							k++
						}
					}
					w.emit(workerLine{Ev: "serving", Serving: k})
				}
			}(ticker)
		case "ready":
			cpu0 = cpuNow()
		case "mark":
			w.mu.Lock()
			w.set.OKAtRead = w.set.OK
			w.mu.Unlock()
		case "report":
			close(ticker)
			ticker = make(chan struct{})
			r := &workerReport{CPU: cpuNow() - cpu0, QueryFailures: failures.Load()}
			now := time.Now().UnixNano()
			for _, m := range members {
				r.FirstOK = append(r.FirstOK, m.firstOK.Load())
				r.MaxGap = append(r.MaxGap, m.gapAt(now))
				if m.firstOK.Load() == 0 {
					r.Unserved = append(r.Unserved, m.tr.String())
				}
			}
			w.mu.Lock()
			r.Setups = w.set
			w.since = time.Time{}
			w.mu.Unlock()
			down.Store(0)
			w.emit(workerLine{Ev: "report", Report: r})
		case "ours":
			r := &workerReport{}
			for _, m := range members {
				back := m.tr.oursBack()
				r.OursOK = append(r.OursOK, back)
				if back == 0 {
					r.OursLate = append(r.OursLate, m.tr.String())
				}
			}
			w.emit(workerLine{Ev: "ours", Report: r})
		case "live":
			k := 0
			for _, m := range members {
				if m.live.Load() {
					k++
				}
			}
			w.emit(workerLine{Ev: "live", Serving: k})
		case "quit":
			return nil
		}
	}
	return nil
}
