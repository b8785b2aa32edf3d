package main

import (
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// An interrupted run (Ctrl-C, SIGTERM) leaves nothing behind: the coordinator runs what
// atInterrupt registered (the cluster's JVMs, the SYN counter's nftables table, the data
// directory) and exits 130. The workers, the Java workers' JVMs and the Cassandra JVMs have
// Pdeathsig too, so they also end with the coordinator if a cleanup hangs. The rows measured
// so far are in the results file already (each is merged as it is measured).

// interrupts holds the cleanups of the resources in use, by registration.
var interrupts struct {
	sync.Mutex
	next int
	fs   map[int]func()
}

// atInterrupt registers f to run on an interrupt; the returned func unregisters it (call it
// once the resource is released the normal way).
func atInterrupt(f func()) (unregister func()) {
	interrupts.Lock()
	defer interrupts.Unlock()
	if interrupts.fs == nil {
		interrupts.fs = map[int]func(){}
	}
	id := interrupts.next
	interrupts.next++
	interrupts.fs[id] = f
	return func() {
		interrupts.Lock()
		defer interrupts.Unlock()
		delete(interrupts.fs, id)
	}
}

// runInterrupts runs every registered cleanup, latest first, each at most once, and reports
// whether they all ended within within.
func runInterrupts(within time.Duration) bool {
	interrupts.Lock()
	fs := interrupts.fs
	interrupts.fs = nil
	interrupts.Unlock()
	ids := slices.Sorted(maps.Keys(fs))
	slices.Reverse(ids)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, id := range ids {
			fs[id]()
		}
	}()
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// interrupted is set once a signal arrived: the handler's cleanup then owns the exit.
var interrupted atomic.Bool

// awaitInterrupt blocks forever once an interrupt's cleanup runs, so that the run it cut short
// (a worker it killed fails the run) does not exit before the cleanup ends; else it returns.
func awaitInterrupt() {
	if interrupted.Load() {
		select {}
	}
}

// handleInterrupts makes SIGINT and SIGTERM stop the run cleanly (a second one exits at once).
func handleInterrupts(out string) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		interrupted.Store(true)
		fmt.Fprintf(os.Stderr, "fleet: %v: stopping the cluster and removing the SYN counter (again to exit at once); the rows measured so far are in %s\n", s, out)
		go func() {
			<-sigs
			os.Exit(130)
		}()
		if !runInterrupts(2 * time.Minute) {
			fmt.Fprintln(os.Stderr, "fleet: the cleanup did not end within 2 minutes; exiting (the JVMs end with this process)")
		}
		os.Exit(130)
	}()
}
