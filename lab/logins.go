package lab

import (
	"container/heap"
	"slices"
	"time"
)

// loginQueue is the server side the fleet view leaves out, as small as it can be: K clients
// that each set up conns connections to one node the moment it answers (spread over the first
// spread, as gocql's ~1 s loop does), and a node that checks one login at a time at perSec
// (the login throughput bench/fleet measures as its floor), first come first served. A setup
// whose login is not checked within timeout (gocql's ConnectTimeout, 11 s) is abandoned and set
// up again within again; the node still checks a share checkAbandoned of the logins queued
// before their client gave up (wasted logins), and drops the rest at no cost. A client serves
// once one of its pool's connections is set up (not its control connection, nor cqlcontrol's). It exists to
// test whether the lab could be brought near bench/fleet's figures (docs/fleet.md, "The lab
// beside these figures"); it knows nothing of a driver's host state or of the governor.
type loginQueue struct {
	clients, conns int
	// Connections 0..control-1 are control connections; the next pool serve queries; any
	// after them (cqlcontrol's own) neither.
	control, pool  int
	perSec         float64
	timeout        time.Duration
	spread, again  time.Duration // first setups within spread; an abandoned one again within again
	checkAbandoned float64
	horizon        time.Duration // setups arriving later are not simulated
	seed           uint64
}

// loginReturn is what loginQueue gives, in the fleet table's terms: seconds from the node
// answering to each client's first usable connection (T50, T95, T100 nearest-rank over the
// clients that served; Unserved did not within the horizon), logins the node checked and those
// no client kept.
type loginReturn struct {
	T50, T95, T100 float64
	Unserved       int
	Logins, Wasted int
}

type setup struct {
	at           time.Duration
	client, slot int
	seq          int // arrival order among equal times
}

type setupHeap []setup

func (h setupHeap) Len() int { return len(h) }
func (h setupHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h setupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *setupHeap) Push(x any)   { *h = append(*h, x.(setup)) }
func (h *setupHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// run simulates the return. The queue is served in arrival order, so taking setups from a heap
// by arrival time is taking them in the node's order.
func (q loginQueue) run() loginReturn {
	rnd := stream(q.seed, "logins", q.clients, q.conns)
	check := time.Duration(float64(time.Second) / q.perSec)
	var h setupHeap
	seq := 0
	push := func(at time.Duration, c, s int) {
		heap.Push(&h, setup{at: at, client: c, slot: s, seq: seq})
		seq++
	}
	for c := range q.clients {
		for s := range q.conns {
			push(time.Duration(rnd.Float64()*float64(q.spread)), c, s)
		}
	}
	served := make([]time.Duration, q.clients)
	for i := range served {
		served[i] = -1
	}
	var out loginReturn
	var free time.Duration // when the node is next idle
	for h.Len() > 0 {
		st := heap.Pop(&h).(setup)
		if st.at > q.horizon {
			break
		}
		begin := max(free, st.at)
		retry := func() { push(st.at+q.timeout+time.Duration(rnd.Float64()*float64(q.again)), st.client, st.slot) }
		if begin-st.at > q.timeout { // its client gave up while it queued
			if rnd.Float64() < q.checkAbandoned {
				free = begin + check
				out.Logins++
				out.Wasted++
			}
			retry()
			continue
		}
		free = begin + check
		out.Logins++
		if free-st.at > q.timeout {
			out.Wasted++
			retry()
			continue
		}
		if st.slot >= q.control && st.slot < q.control+q.pool && served[st.client] < 0 {
			served[st.client] = free
		}
	}
	var ts []time.Duration
	for _, s := range served {
		if s < 0 {
			out.Unserved++
			continue
		}
		ts = append(ts, s)
	}
	slices.Sort(ts)
	if len(ts) > 0 {
		out.T50, out.T95, out.T100 = percentile(ts, 0.5), percentile(ts, 0.95), ts[len(ts)-1].Seconds()
	}
	return out
}
