package clientprobe

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// Caller is the part of the client process that dialled.
type Caller uint8

const (
	Ours         Caller = iota // no gocql frame on the stack: our ControlConnection (or the test)
	GocqlControl               // gocql's control connection
	GocqlPool                  // the rest of gocql: its connection pools
)

func (c Caller) String() string {
	switch c {
	case GocqlControl:
		return "gocql-control"
	case GocqlPool:
		return "gocql-pool"
	}
	return "ours"
}

// CallerOf says which part of the process is on the calling goroutine's stack: gocql's control
// connection (a method of gocql's controlConn: connect, reconnect,
// attemptReconnectToAnyOfHosts in v1.7.0), another part of gocql (its pools dial from
// hostConnPool.connect), or neither.
func CallerOf() Caller {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	by := Ours
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, "github.com/gocql/gocql.(*controlConn)."):
			return GocqlControl
		case strings.HasPrefix(f.Function, "github.com/gocql/gocql."):
			by = GocqlPool
		}
		if !more {
			return by
		}
	}
}

// Counts are the dials of a window by caller.
type Counts struct {
	Ours, GocqlControl, GocqlPool int
}

// Total is every dial of the window.
func (c Counts) Total() int { return c.Ours + c.GocqlControl + c.GocqlPool }

// Dialer is a gocql.Dialer (and controlconn's) that records every dial it makes before making
// it with Inner (a net.Dialer with Timeout when nil). Set it as the cluster's Dialer: under the
// dial governor it sees only the dials the governor let through, the SYNs the cluster sees.
type Dialer struct {
	Inner   gocql.Dialer
	Timeout time.Duration // of the default net.Dialer when Inner is nil

	mu    sync.Mutex
	dials []Dial
}

// Dial is one dial a Dialer made.
type Dial struct {
	At   time.Time
	By   Caller
	Addr string
}

// DialContext implements gocql.Dialer.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	rec := Dial{At: time.Now(), By: CallerOf(), Addr: addr}
	d.mu.Lock()
	d.dials = append(d.dials, rec)
	inner := d.Inner
	d.mu.Unlock()
	if inner == nil {
		inner = &net.Dialer{Timeout: d.Timeout}
	}
	return inner.DialContext(ctx, network, addr)
}

// In counts the dials started within [from, to), by caller.
func (d *Dialer) In(from, to time.Time) Counts {
	var c Counts
	for _, r := range d.Dials(from, to) {
		switch r.By {
		case Ours:
			c.Ours++
		case GocqlControl:
			c.GocqlControl++
		case GocqlPool:
			c.GocqlPool++
		}
	}
	return c
}

// Dials returns the dials started within [from, to), in order: for a test to show what a count
// was made of.
func (d *Dialer) Dials(from, to time.Time) []Dial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return filter(d.dials, func(r Dial) bool { return Within(r.At, from, to) })
}
