package controlconn

import "time"

// hostRecord is what the worker knows about one host's liveness beyond the snapshot's state:
// when it last had evidence the host was up, how many reports it applied (a probe started
// before a later report gives no verdict), whether a report arrived since the current
// connection was adopted (its scheduled probe is then unnecessary), and a session HostDown
// held until a probe settles it. Owned by the run goroutine.
type hostRecord struct {
	upAt     time.Time     // newest evidence of the host up: a pushed UP, gocql's HostUp, a probe answered, our connection to it
	seq      uint64        // reports applied
	reported bool          // reported on since the current connection was adopted
	held     *pendingState // a session HostDown not newer than upAt, until its probe answers
}

// hostTable is the worker's table of hostRecords, by host ID (owner goroutine).
type hostTable map[string]*hostRecord

// get returns id's record, creating it.
func (t hostTable) get(id string) *hostRecord {
	r, ok := t[id]
	if !ok {
		r = &hostRecord{}
		t[id] = r
	}
	return r
}

// seq is the number of reports applied about id (0 for a host never reported on).
func (t hostTable) seq(id string) uint64 {
	if r, ok := t[id]; ok {
		return r.seq
	}
	return 0
}

// sawUp notes evidence, at at, that id was up.
func (t hostTable) sawUp(id string, at time.Time) {
	if id == "" {
		return
	}
	if r := t.get(id); at.After(r.upAt) {
		r.upAt = at
	}
}

// adopted starts a new connection's round of probes: nobody has reported on any host since,
// and a held HostDown whose probe belonged to the connection before is applied by the probes
// of this one instead.
func (t hostTable) adopted() {
	for _, r := range t {
		r.reported, r.held = false, nil
	}
}

// retain forgets the hosts keep does not accept (hosts the cluster no longer lists).
func (t hostTable) retain(keep func(id string) bool) {
	for id := range t {
		if !keep(id) {
			delete(t, id)
		}
	}
}
