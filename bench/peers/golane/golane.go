// Package golane is what the Go lanes share: the hosts to use, the loop that runs one query
// pinned to each host every 25 ms, and the JSON lines the harness reads (the same lines every
// other lane prints). A lane's main sets its driver up as its documentation does and hands Run
// a function that queries one host.
package golane

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Interval is how often each host's pinned query runs (a slow answer delays the next one).
const Interval = 25 * time.Millisecond

// Line is one line of a lane's output: an event ("connected", "fatal") or a host's state change
// (ok, with the host's failed queries so far and the last error).
type Line struct {
	TS     int64  `json:"ts"` // Unix milliseconds
	Event  string `json:"event,omitempty"`
	Host   string `json:"host,omitempty"`
	OK     *bool  `json:"ok,omitempty"`
	Errors int    `json:"errors"`
	Err    string `json:"err,omitempty"`
}

var outMu sync.Mutex

// Emit prints l as one JSON line, stamped with the time now.
func Emit(l Line) {
	l.TS = time.Now().UnixMilli()
	b, _ := json.Marshal(l)
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = os.Stdout.Write(append(b, '\n'))
}

// Fatal reports that the lane cannot go on, and exits.
func Fatal(err error) {
	Emit(Line{Event: "fatal", Err: err.Error()})
	os.Exit(1)
}

// Hosts returns the cluster's addresses from PEERS_HOSTS (comma-separated).
func Hosts() []string {
	return strings.Split(os.Getenv("PEERS_HOSTS"), ",")
}

// Run prints "connected", then queries each host with query every Interval, printing a line
// whenever a host's answer changes (ok to failing, failing to ok, or another error), until the
// process is told to stop (SIGTERM or SIGINT).
func Run(hosts []string, query func(ctx context.Context, host string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	Emit(Line{Event: "connected"})
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() { poll(ctx, h, query) })
	}
	wg.Wait()
}

func poll(ctx context.Context, host string, query func(ctx context.Context, host string) error) {
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	var (
		known   bool
		ok      bool
		lastErr string
		errors  int
	)
	for {
		err := query(context.Background(), host) // the driver's own timeouts, as an application has them
		if ctx.Err() != nil {
			return
		}
		msg := ""
		if err != nil {
			errors++
			msg = err.Error()
		}
		if !known || ok != (err == nil) || msg != lastErr {
			known, ok, lastErr = true, err == nil, msg
			Emit(Line{Host: host, OK: &ok, Errors: errors, Err: msg})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
