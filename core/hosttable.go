package core

import (
	"iter"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// hostRecord is what the worker knows about one host beyond the snapshot's state: what the
// latest host event (gocql's, our connection's) or our latest refused dial says of it, which
// overrides the snapshot's state in the hosts published for attempts and for the governor;
// when it last had evidence the host was up; how many reports it applied (a probe started
// before a later report gives no verdict); whether a report arrived since the current
// connection was adopted (its scheduled probe is then unnecessary); a session HostDown held
// until a probe settles it; a status kept until the snapshot lists the host; an UP our
// connection announced, until gocql's HostUp ends the data-path lag it started; and what our
// own dials of its address met since it last answered (the planner's record, which orders our
// attempts' hosts and backs off a known-down one). Owned by the run goroutine.
type hostRecord struct {
	believed bool          // a host event or a refused dial of ours spoke of it: belief and ep are set
	belief   plan.Belief   // what it said
	ep       Endpoint      // the host as it named it (its address is used for a host the snapshot does not list)
	upAt     time.Time     // newest evidence of the host up: a pushed UP, gocql's HostUp, a probe answered, our connection to it
	seq      uint64        // reports applied
	reported bool          // reported on since the current connection was adopted
	held     *pendingState // a session HostDown not newer than upAt, until its probe answers
	pending  *pendingState // a status for a host the snapshot does not list yet (applyPending)
	lagFrom  *sawUp        // an UP announced on our connection, gocql's HostUp awaited (dataPathBack)
	// downProbes counts the probes of the current connection that found the host down (or
	// were refused by the governor) since one found it up: probeAgain's backoff.
	downProbes int
	dialAddr   string           // the address dial is about
	dial       *plan.DialRecord // our dials' failures at dialAddr; nil: none since it answered
}

// hostTable is the worker's one table of what is known about each host (owner goroutine):
// what host events, probes and our refused dials said of it, and what our own dials met
// (failures, backoff, evidence of up: the records the planner orders an attempt's hosts from),
// in one record per host (recs: by host ID, else by address for a host event naming no host
// ID or a dialled address no published host has, or by ip:port for a status kept for a host
// the snapshot does not list). The planner (dials) keeps its records in the table (plan.Records):
// an address's dial record is a field of the record of the host the published hosts give it
// (byAddr), moved there when they first do (publishHosts). It is pruned in one place
// (pruneHosts). Attempts plan from a copy (dials.View), and their dials' outcomes come back
// with their results (finishAttempt).
type hostTable struct {
	recs    map[string]*hostRecord
	byAddr  map[string]string // address -> host ID, of the hosts published last
	dials   *plan.Planner     // the rules of our dials, over the dial records of recs
	pending int               // records holding a status for a host the snapshot does not list (keep)
}

func newHostTable() hostTable {
	return hostTable{recs: map[string]*hostRecord{}, byAddr: map[string]string{}}
}

// dialKey is the key of the record that holds addr's dial record.
func (t *hostTable) dialKey(addr string) string {
	if id, ok := t.byAddr[addr]; ok {
		return id
	}
	return addr
}

// Dial is addr's dial record, nil if it has none (plan.Records).
func (t *hostTable) Dial(addr string) *plan.DialRecord {
	if r, ok := t.recs[t.dialKey(addr)]; ok && r.dialAddr == addr {
		return r.dial
	}
	return nil
}

// NewDial is addr's dial record, a new one if it has none (plan.Records). A record holds one
// address's: a host's record holding another (an address the host no longer has) gives it up.
func (t *hostTable) NewDial(addr string) *plan.DialRecord {
	r := t.get(t.dialKey(addr))
	if r.dial == nil || r.dialAddr != addr {
		r.dialAddr, r.dial = addr, &plan.DialRecord{}
	}
	return r.dial
}

// Forget ends addr's dial record, and a record of the address's own if that was all it held
// (plan.Records). A host's record stays until pruneHosts: its callers may hold it.
func (t *hostTable) Forget(addr string) {
	key := t.dialKey(addr)
	r, ok := t.recs[key]
	if !ok || r.dialAddr != addr {
		return
	}
	r.dialAddr, r.dial = "", nil
	if key == addr {
		t.dropEmpty(key)
	}
}

// Dials is every dial record with its address (plan.Records).
func (t *hostTable) Dials() iter.Seq2[string, *plan.DialRecord] {
	return func(yield func(string, *plan.DialRecord) bool) {
		for _, r := range t.recs {
			if r.dial != nil && !yield(r.dialAddr, r.dial) {
				return
			}
		}
	}
}

// dropEmpty deletes key's record if it holds nothing.
func (t *hostTable) dropEmpty(key string) {
	if r, ok := t.recs[key]; ok && *r == (hostRecord{}) {
		delete(t.recs, key)
	}
}

// index notes which host each published address belongs to, and moves every dial record to
// the record of its address's host (a contact point dialled before metadata named its host, a
// host's old address back to a record of its own).
func (t *hostTable) index(hosts []plan.PlanHost) {
	clear(t.byAddr)
	for _, h := range hosts {
		if h.HostID != "" && h.Addr != "" {
			t.byAddr[h.Addr] = h.HostID
		}
	}
	type moving struct {
		addr string
		dial *plan.DialRecord
	}
	var moves []moving
	for key, r := range t.recs {
		if r.dial != nil && t.dialKey(r.dialAddr) != key {
			addr := r.dialAddr
			moves = append(moves, moving{addr, r.dial})
			r.dialAddr, r.dial = "", nil
			if key == addr {
				t.dropEmpty(key) // a record of the address's own
			}
		}
	}
	// All taken out before any is put back: a host's record may give up its old address's
	// record and take its new one's in the same call.
	for _, m := range moves {
		to := t.get(t.dialKey(m.addr))
		to.dialAddr, to.dial = m.addr, m.dial
	}
}

// get returns id's record, creating it.
func (t *hostTable) get(id string) *hostRecord {
	r, ok := t.recs[id]
	if !ok {
		r = &hostRecord{}
		t.recs[id] = r
	}
	return r
}

// seq is the number of reports applied about id (0 for a host never reported on).
func (t *hostTable) seq(id string) uint64 {
	if r, ok := t.recs[id]; ok {
		return r.seq
	}
	return 0
}

// evidence notes that hint (a host ID, "ip" or "ip:port") was up at at: our dials' failures of
// its addresses no longer hold it back (hosts: the hosts published, to find them by ID or IP).
func (t *hostTable) evidence(hint string, hosts []plan.PlanHost, at time.Time) {
	t.dials.Evidence(hint, hosts, at)
}

// dialed records the outcomes of an attempt's dials, in the order they ended, as it ends.
func (t *hostTable) dialed(outcomes []dialOutcome) {
	for _, d := range outcomes {
		if d.ok {
			t.dials.DialSucceeded(d.ep.Addr)
		} else {
			t.dials.DialFailed(d.ep.Addr, d.at)
		}
	}
	t.dials.AttemptEnded()
}

// keep holds p, a status for a host the snapshot does not list yet, under key until a snapshot
// lists the host (the latest per key), unless maxPendingStates keys hold one already.
func (t *hostTable) keep(key string, p pendingState) {
	if r, ok := t.recs[key]; !ok || r.pending == nil {
		if t.pending >= maxPendingStates {
			return
		}
		t.pending++
	}
	t.get(key).pending = &p
}

// kept ends the status held under key (applied), and the record if that was all it held.
func (t *hostTable) kept(key string) {
	r, ok := t.recs[key]
	if !ok || r.pending == nil {
		return
	}
	r.pending = nil
	t.pending--
	t.dropEmpty(key) // kept only for the status (by ip:port)
}

// sawUp notes evidence, at at, that id was up.
func (t *hostTable) sawUp(id string, at time.Time) {
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
func (t *hostTable) adopted() {
	for _, r := range t.recs {
		r.reported, r.held, r.downProbes = false, nil, 0
	}
}

// believe records what a host event or a refused dial of ours says of the host keyed key.
func (t *hostTable) believe(key string, ep Endpoint, b plan.Belief) {
	r := t.get(key)
	r.believed, r.belief, r.ep = true, b, ep
}

// added records a host announced added: its endpoint, and no belief about its state beyond
// one it had.
func (t *hostTable) added(key string, ep Endpoint) {
	r := t.get(key)
	if !r.believed {
		r.believed, r.belief = true, plan.BeliefUnknown
	}
	r.ep = ep
}

// removed forgets what host events said of the host keyed key (announced removed).
func (t *hostTable) removed(key string) {
	if r, ok := t.recs[key]; ok {
		r.believed, r.belief, r.ep = false, plan.BeliefUnknown, Endpoint{}
	}
}

// publishHosts merges the snapshot's hosts with the host table's beliefs (the latest host
// event or refused dial about a host wins over the snapshot's state) and publishes them for
// attempts and the governor.
func (cc *ControlConnection) publishHosts(o *owner) {
	var hosts []plan.PlanHost
	seen := map[string]bool{}
	if snap := cc.store.Current(); snap != nil {
		for h, st := range snap.All() {
			ph := plan.PlanHost{Endpoint: cc.endpointOf(h)}
			switch st {
			case metadata.StateUp:
				ph.Belief = plan.BeliefUp
			case metadata.StateDown:
				ph.Belief = plan.BeliefDown
			}
			if r, ok := o.hosts.recs[h.HostID()]; ok && r.believed {
				ph.Belief = r.belief
			}
			seen[h.HostID()] = true
			hosts = append(hosts, ph)
		}
	}
	for key, r := range o.hosts.recs {
		if !r.believed || seen[key] || r.ep.Addr == "" {
			continue
		}
		hosts = append(hosts, plan.PlanHost{Endpoint: r.ep, Belief: r.belief})
	}
	o.hosts.index(hosts)
	cc.planHosts.Store(&hosts)
	cc.forgetRemoved(hosts)
}

// endpointOf is the Endpoint ours dials for h: its address through the AddressTranslator.
func (cc *ControlConnection) endpointOf(h metadata.Host) Endpoint {
	return Endpoint{Addr: cc.translate(h.ConnectAddress(), h.Port()), HostID: h.HostID(), DC: h.DataCenter()}
}

// translate is ip:port through the configured AddressTranslator, if any.
func (cc *ControlConnection) translate(ip net.IP, port int) string {
	if cc.cfg.AddressTranslator != nil {
		ip, port = cc.cfg.AddressTranslator.Translate(ip, port)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

// pruneHosts forgets, after a metadata read the store accepted, the records of hosts the
// cluster no longer lists (removed, or an address a host no longer has), except a status kept
// for a host it does not list yet (bounded by maxPendingStates): publishHosts would
// otherwise keep them among the hosts of every plan and every host table for good, and the
// table would grow with address churn. Our dials' records of such addresses go too, except the
// contact points', which stay in a record of their own (owner goroutine).
func (cc *ControlConnection) pruneHosts(o *owner) {
	snap := cc.store.Current()
	if snap == nil {
		return
	}
	listed := map[string]bool{}
	for h := range snap.All() {
		listed[strings.ToLower(h.HostID())] = true
		listed[h.ConnectAddress().String()] = true
		listed[cc.translate(h.ConnectAddress(), h.Port())] = true
	}
	o.hosts.dials.Retain(func(addr string) bool { return listed[addr] || o.contacts[addr] })
	for key, r := range o.hosts.recs {
		if r.pending == nil && !listed[strings.ToLower(key)] && (r.ep.Addr == "" || !listed[r.ep.Addr]) {
			if r.dial == nil {
				delete(o.hosts.recs, key)
				continue
			}
			*r = hostRecord{dialAddr: r.dialAddr, dial: r.dial} // a contact point's: publishHosts files it by address
		}
	}
}

// forgetRemoved tells the host tables keyed by address, the governor's and the cache of gocql's
// HostInfos, that the hosts just published are the ones known now, so that they forget hosts
// removed from the cluster and addresses hosts no longer have (owner goroutine, once metadata
// has been read). The governor reads them from planHosts itself (govMember.Known).
func (cc *ControlConnection) forgetRemoved(hosts []plan.PlanHost) {
	if (cc.gov == nil && cc.retain == nil) || cc.store.Current() == nil {
		return
	}
	cc.gov.Known()
	if cc.retain != nil {
		known := make(map[string]struct{}, len(hosts))
		for _, h := range hosts {
			known[h.Addr] = struct{}{}
		}
		cc.retain(func(addr string) bool {
			_, ok := known[addr]
			return ok
		})
	}
}

// refusedDials marks down the hosts whose address refused a dial of ours (nothing listened
// on its native port), unless newer evidence says the host is up: without it a node that
// restarted while ours was away, and that nobody reported down, would never be seen going
// down nor coming back (owner goroutine, as an attempt ends, before any adoption).
func (cc *ControlConnection) refusedDials(o *owner, dials []dialOutcome) {
	snap := cc.store.Current()
	if snap == nil || len(dials) == 0 {
		return
	}
	changed := false
	for _, d := range dials {
		if !d.refused {
			continue
		}
		id := d.ep.HostID
		if id == "" {
			for h := range snap.All() {
				if cc.translate(h.ConnectAddress(), h.Port()) == d.ep.Addr {
					id = h.HostID()
					break
				}
			}
		}
		if _, ok := snap.Host(id); !ok {
			continue // a contact point the cluster does not list
		}
		r := o.hosts.get(id)
		if !d.at.After(r.upAt) {
			continue
		}
		r.seq++
		r.held = nil
		o.hosts.believe(id, d.ep, plan.BeliefDown)
		changed = true
		if changes, err := cc.store.SetState(id, false); err == nil && len(changes) > 0 {
			cc.log.Info("host down: our dial was refused", "host_id", id, "addr", d.ep.Addr)
		}
	}
	if changed {
		cc.publishHosts(o)
	}
}

// takeDialEvidence applies to the host table every address the governor's evidence named since
// run last took them (owner goroutine).
func (cc *ControlConnection) takeDialEvidence(o *owner) {
	cc.evMu.Lock()
	taken := cc.evAddrs
	cc.evAddrs = nil
	cc.evMu.Unlock()
	for addr, at := range taken {
		o.hosts.evidence(addr, nil, at)
	}
}
