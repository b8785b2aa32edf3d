package clientprobe

import (
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// Connect is one connection gocql tried, as its ConnectObserver saw it.
type Connect struct {
	Start, End time.Time
	Err        error
	By         Caller // GocqlControl or GocqlPool
}

// Connects is a gocql.ConnectObserver that records every connection gocql tries, its pools' and
// its control connection's, with the outcome. ObserveConnect runs on the dialling goroutine, so
// the stack says which part of gocql dialled.
type Connects struct {
	mu  sync.Mutex
	all []Connect
}

// ObserveConnect implements gocql.ConnectObserver.
func (c *Connects) ObserveConnect(o gocql.ObservedConnect) {
	rec := Connect{Start: o.Start, End: o.End, Err: o.Err, By: CallerOf()}
	if rec.By == Ours {
		rec.By = GocqlPool // called by gocql, whatever its stack says
	}
	c.mu.Lock()
	c.all = append(c.all, rec)
	c.mu.Unlock()
}

// All returns a copy of what was recorded, in order.
func (c *Connects) All() []Connect {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Connect(nil), c.all...)
}

var _ gocql.ConnectObserver = (*Connects)(nil)
