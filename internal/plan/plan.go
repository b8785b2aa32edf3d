package plan

import (
	"iter"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Belief is what the control connection believes about a host's availability.
type Belief uint8

const (
	BeliefUnknown Belief = iota // no evidence either way (just added, or never seen)
	BeliefUp                    // the last snapshot or event said up
	BeliefDown                  // the last snapshot or event said down
)

func (b Belief) String() string {
	switch b {
	case BeliefUp:
		return "up"
	case BeliefDown:
		return "down"
	}
	return "unknown"
}

// PlanHost is one known host as the planner sees it.
type PlanHost struct {
	cqlconn.Endpoint
	Belief Belief
}

// PlanInput is everything the host plan of one attempt depends on besides the record of our
// dials it is planned from (a View).
type PlanInput struct {
	Hint    string     // evidenced host: host ID, "ip" or "ip:port"; "" for none
	Hosts   []PlanHost // known hosts (from the last metadata snapshot and host events)
	LocalDC string     // when set, local-DC hosts come before remote ones within a group
	Port    int        // port for a hint given as a bare IP
	ReArmed bool       // the attempt was started by evidence: down hosts respect their backoff
	// Limit, when positive, bounds the known hosts of the plan besides the evidenced one: the
	// Limit hosts whose latest failure is the oldest (hosts without one first, in the order
	// Plan gives them), so that successive attempts rotate through the cluster; contact points
	// that are not known hosts then respect their backoff. Zero plans every known host.
	Limit int
}

// BlindAttemptHosts is the Limit of a blind attempt after the first of a recovery: it dials
// the evidenced host, if any, and this many other known hosts, whatever the size of the
// cluster. Two, so that one host that does not answer (a blackholed one) cannot make an
// attempt miss a cluster that is back: the other is dialled after StaggerDelay.
const BlindAttemptHosts = 2

// PlanLimit is the PlanInput.Limit of attempt a: 0 (every known host) for the first attempt of
// a recovery, which must find a live host at once when only some hosts are down, and for
// re-armed attempts, where known-down hosts respect their own backoff instead; BlindAttemptHosts
// for every later blind attempt.
func PlanLimit(a reconnect.Attempt) int {
	if a.ReArmed || a.N <= 1 {
		return 0
	}
	return BlindAttemptHosts
}

// Planner holds the rules that order the hosts of an attempt from the record of our own dials,
// by address, which it keeps in Records (controlconn's worker keeps each in the host's record
// of its host table). In an attempt started by evidence (a re-arm) a known-down host is
// dialled at most once per its own backoff: after k consecutive failures it waits
// min(base·2^(k-1), max) before it is dialled again, so evidence arriving twice a second cannot
// make dead hosts be dialled twice a second. Attempts of the blind schedule ignore that backoff
// (the schedule is theirs); the first of a recovery dials every known host, so that a live host
// is found at once when only some are down, and the later ones (PlanInput.Limit) dial
// BlindAttemptHosts of them in turn, the least recently failed first, so that their cost does
// not grow with the cluster. The evidenced host ignores its backoff and every limit, and so
// does the longest-waiting host when every candidate would otherwise be skipped, so an attempt
// always dials at least one host.
//
// A Planner has one owner and no lock: controlconn's worker hands each attempt an immutable
// copy of the records (View) to plan from on the attempt's goroutine, records the evidence of
// hosts up (Evidence) and the loss of its connection (Suspect) as they arrive, and the
// outcomes of the attempt's dials when it ends (DialFailed, DialSucceeded, then AttemptEnded).
type Planner struct {
	base, max time.Duration
	shuffle   func(n int, swap func(i, j int))

	recs      Records
	inflight  bool                 // an attempt planned from a View has not ended: its failures are reported later
	evidenced map[string]time.Time // while inflight, by address: the latest evidence the host is up (a failure from before it is stale)
	index     hostIndex            // of the hosts Evidence was last given
}

// DialRecord is what our dials met at one address since it last answered: the failures in a
// row, the latest (or the loss of our connection from it), and when it may be dialled again.
type DialRecord struct {
	failures int
	lastFail time.Time // the latest failed dial or lost connection: the rotation's key
	next     time.Time // not dialled before this, unless evidenced or forced
}

// Records is where a Planner keeps its DialRecords, by address "ip:port", so that its owner
// can keep each with the rest of what it knows about the host. The Planner only asks and sets
// them from its owner's goroutine.
type Records interface {
	Dial(addr string) *DialRecord    // addr's record, nil if it has none
	NewDial(addr string) *DialRecord // addr's record, a new empty one if it has none
	Forget(addr string)              // addr has no record any more
	Dials() iter.Seq2[string, *DialRecord]
}

// MapRecords is Records in a map of its own, for a Planner whose owner keeps nothing else per
// host.
type MapRecords map[string]*DialRecord

func (m MapRecords) Dial(addr string) *DialRecord { return m[addr] }

func (m MapRecords) NewDial(addr string) *DialRecord {
	r := m[addr]
	if r == nil {
		r = &DialRecord{}
		m[addr] = r
	}
	return r
}

func (m MapRecords) Forget(addr string) { delete(m, addr) }

func (m MapRecords) Dials() iter.Seq2[string, *DialRecord] {
	return func(yield func(string, *DialRecord) bool) {
		for a, r := range m {
			if !yield(a, r) {
				return
			}
		}
	}
}

// View is an immutable copy of a Planner's records, which an attempt plans from on its own
// goroutine while the owner goes on recording.
type View struct {
	shuffle func(n int, swap func(i, j int))
	down    map[string]DialRecord
}

// View copies the records for one attempt, which is in flight until AttemptEnded.
func (p *Planner) View() View {
	p.inflight = true
	v := View{shuffle: p.shuffle, down: map[string]DialRecord{}}
	for addr, r := range p.recs.Dials() {
		v.down[addr] = *r
	}
	return v
}

// hostIndex finds the addresses a hint names (matchesHint) without scanning every host. It is
// built once per hosts slice: the owner passes the same published slice for every event of a
// batch, so a batch about N hosts costs O(N), not O(N²).
type hostIndex struct {
	first *PlanHost // identity of the slice indexed: its first element and length
	n     int
	byID  map[string][]string // lower-case host ID -> addresses
	byIP  map[string][]string // IP in canonical form -> addresses
}

// smallHosts is the size under which Evidence scans the hosts instead of indexing them.
const smallHosts = 16

func (x *hostIndex) of(hosts []PlanHost) *hostIndex {
	if x.first == &hosts[0] && x.n == len(hosts) {
		return x
	}
	*x = hostIndex{first: &hosts[0], n: len(hosts),
		byID: make(map[string][]string, len(hosts)), byIP: make(map[string][]string, len(hosts))}
	for _, h := range hosts {
		if h.HostID != "" {
			id := strings.ToLower(h.HostID)
			x.byID[id] = append(x.byID[id], h.Addr)
		}
		if host, _, err := net.SplitHostPort(h.Addr); err == nil {
			if ip := net.ParseIP(host); ip != nil {
				x.byIP[ip.String()] = append(x.byIP[ip.String()], h.Addr)
			}
		}
	}
	return x
}

// forEach calls f with the address of every indexed host hint names: by host ID or IP (a hint
// equal to an address is the caller's to handle, as the address is the key).
func (x *hostIndex) forEach(hint string, f func(addr string)) {
	for _, a := range x.byID[strings.ToLower(hint)] {
		f(a)
	}
	if ip := net.ParseIP(hint); ip != nil {
		for _, a := range x.byIP[ip.String()] {
			f(a)
		}
	}
}

// Defaults of the per-host backoff of known-down hosts.
const (
	DefaultDownBackoffBase = time.Second
)

// NewPlanner returns a planner keeping its records in recs (a MapRecords when nil), whose
// down-host backoff starts at base and doubles up to max. shuffle may be nil (math/rand/v2);
// tests pass a deterministic one.
func NewPlanner(recs Records, base, max time.Duration, shuffle func(n int, swap func(i, j int))) *Planner {
	if shuffle == nil {
		shuffle = rand.Shuffle
	}
	if recs == nil {
		recs = MapRecords{}
	}
	return &Planner{base: base, max: max, shuffle: shuffle, recs: recs, evidenced: map[string]time.Time{}}
}

// Plan is the ordered host plan of one attempt.
type Plan struct {
	Endpoints []cqlconn.Endpoint // in dial order: evidenced, up, unknown, eligible down
	view      View               // the records it was planned from (Admit)
	seen      map[string]bool
	backoff   bool // down hosts and failed contact points respect their backoff
	bounded   bool // known hosts were limited: failed contact points respect their backoff
}

// Plan orders the known hosts: the evidenced host first; then hosts believed up (shuffled,
// local DC first); then unknown (same order rule); then hosts known down — believed down or
// with a failed dial on record — longest-waiting first, and in a re-armed attempt only those
// whose backoff has expired. With in.Limit, the known hosts other than the evidenced one are
// limited to the in.Limit of them whose latest failure is the oldest. Contact points are
// appended later through Admit.
func (v View) Plan(now time.Time, in PlanInput) *Plan {
	plan := &Plan{view: v, seen: map[string]bool{}, backoff: in.ReArmed}
	add := func(ep cqlconn.Endpoint) {
		if ep.Addr == "" || plan.seen[ep.Addr] {
			return
		}
		plan.seen[ep.Addr] = true
		plan.Endpoints = append(plan.Endpoints, ep)
	}

	hinted := -1
	if in.Hint != "" {
		for i, h := range in.Hosts {
			if matchesHint(h.Endpoint, in.Hint) {
				hinted = i
				add(h.Endpoint)
				break
			}
		}
		if hinted < 0 {
			if ep, ok := addressEndpoint(in.Hint, in.Port); ok {
				add(ep)
			}
		}
	}

	var up, unknown, down []PlanHost
	for i, h := range in.Hosts {
		if i == hinted {
			continue
		}
		_, failed := v.down[h.Addr]
		switch {
		case failed || h.Belief == BeliefDown:
			down = append(down, h)
		case h.Belief == BeliefUp:
			up = append(up, h)
		default:
			unknown = append(unknown, h)
		}
	}
	order := make([]PlanHost, 0, len(in.Hosts))
	for _, group := range [][]PlanHost{up, unknown} {
		v.shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		order = append(order, localFirst(group, in.LocalDC)...)
	}
	sortByWait(down, v.down)
	if in.Limit > 0 && len(in.Hosts) > 0 {
		v.rotate(plan, append(order, down...), in.Limit)
		return plan
	}
	for _, h := range order {
		add(h.Endpoint)
	}
	for _, h := range down {
		if !plan.backoff || v.eligible(h.Addr, now) {
			add(h.Endpoint)
		}
	}
	return plan
}

// rotate puts in plan the limit hosts of order whose latest failure is the oldest (hosts
// without one first; ties keep their order) and marks every host of order as planned, so that
// Admit does not bring the others back as contact points.
func (v View) rotate(plan *Plan, order []PlanHost, limit int) {
	plan.bounded = true
	lastFail := func(h PlanHost) time.Time {
		return v.down[h.Addr].lastFail
	}
	slices.SortStableFunc(order, func(a, b PlanHost) int { return lastFail(a).Compare(lastFail(b)) })
	n := 0
	for _, h := range order {
		if h.Addr == "" || plan.seen[h.Addr] {
			continue
		}
		plan.seen[h.Addr] = true
		if n < limit {
			plan.Endpoints = append(plan.Endpoints, h.Endpoint)
			n++
		}
	}
}

// Admit filters the contact points (already resolved) for plan: addresses already in the plan
// are dropped; in a re-armed or limited attempt, addresses with a failed dial on record are
// admitted only once their backoff expired. If
// nothing at all would be dialled, the longest-waiting candidate (known host or contact
// point) is admitted anyway. The admitted endpoints are also appended to plan.Endpoints. It
// judges by the records plan was made from.
func (plan *Plan) Admit(now time.Time, contacts []cqlconn.Endpoint, known []PlanHost) []cqlconn.Endpoint {
	v := plan.view
	var out []cqlconn.Endpoint
	var skipped []cqlconn.Endpoint
	for _, ep := range contacts {
		if plan.seen[ep.Addr] {
			continue
		}
		plan.seen[ep.Addr] = true
		if (plan.backoff || plan.bounded) && !v.eligible(ep.Addr, now) {
			skipped = append(skipped, ep)
			continue
		}
		out = append(out, ep)
	}
	if len(plan.Endpoints) == 0 && len(out) == 0 {
		candidates := skipped
		for _, h := range known {
			candidates = append(candidates, h.Endpoint)
		}
		var best *cqlconn.Endpoint
		var bestNext time.Time
		for i := range candidates {
			next := v.down[candidates[i].Addr].next
			if best == nil || next.Before(bestNext) {
				best, bestNext = &candidates[i], next
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	plan.Endpoints = append(plan.Endpoints, out...)
	return out
}

func (v View) eligible(addr string, now time.Time) bool {
	return !now.Before(v.down[addr].next)
}

// DialFailed records a dial of addr that failed at now and extends its backoff, unless
// evidence newer than the failure said the host is up (the outcomes of an attempt's dials are
// recorded when it ends).
func (p *Planner) DialFailed(addr string, now time.Time) {
	if at, ok := p.evidenced[addr]; ok && !now.After(at) {
		return
	}
	rec := p.recs.NewDial(addr)
	rec.failures++
	rec.lastFail = now
	rec.next = now.Add(p.backoff(rec.failures))
}

// DialSucceeded forgets the failures of addr.
func (p *Planner) DialSucceeded(addr string) {
	p.recs.Forget(addr)
}

// Evidence forgets the failures of the host with this ID or address: something (gocql's pool,
// a server event) said at at that it is up, so its backoff no longer applies, nor does a
// failure from before at that is recorded later.
func (p *Planner) Evidence(hostIDOrAddr string, hosts []PlanHost, at time.Time) {
	forget := func(addr string) {
		p.recs.Forget(addr)
		if !p.inflight {
			return
		}
		if prev, ok := p.evidenced[addr]; !ok || at.After(prev) {
			p.evidenced[addr] = at
		}
	}
	if hostIDOrAddr == "" {
		return
	}
	forget(hostIDOrAddr) // an address is a key; a host ID or bare IP is none, and harmless
	switch {
	case len(hosts) == 0:
	case len(hosts) <= smallHosts:
		for _, h := range hosts {
			if matchesHint(h.Endpoint, hostIDOrAddr) {
				forget(h.Addr)
			}
		}
	default:
		p.index.of(hosts).forEach(hostIDOrAddr, forget)
	}
}

// Retain forgets the records of every address keep rejects (hosts removed from the cluster,
// addresses a host no longer has), so that the records do not grow with address churn.
func (p *Planner) Retain(keep func(addr string) bool) {
	var gone []string
	for addr := range p.recs.Dials() {
		if !keep(addr) {
			gone = append(gone, addr)
		}
	}
	for _, addr := range gone {
		p.recs.Forget(addr)
	}
}

// AttemptEnded records that the attempt in flight ended and its dials' outcomes are recorded:
// evidence no longer needs remembering.
func (p *Planner) AttemptEnded() {
	p.inflight = false
	clear(p.evidenced)
}

// Records returns the number of addresses with a failed dial on record.
func (p *Planner) Records() int {
	n := 0
	for range p.recs.Dials() {
		n++
	}
	return n
}

// Suspect puts addr among the known-down hosts without a backoff (it is dialled after the
// hosts believed up and unknown), unless it already has a record, and last in the rotation of
// limited attempts: its connection was just lost.
func (p *Planner) Suspect(addr string, now time.Time) {
	rec := p.recs.Dial(addr)
	if rec == nil {
		rec = p.recs.NewDial(addr)
		rec.next = now
	}
	rec.lastFail = now
}

// NextEligible returns when addr may be dialled again (zero if now).
func (p *Planner) NextEligible(addr string) time.Time {
	if rec := p.recs.Dial(addr); rec != nil {
		return rec.next
	}
	return time.Time{}
}

func (p *Planner) backoff(failures int) time.Duration {
	d := p.base
	for i := 1; i < failures && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

// matchesHint reports whether hint names ep: by host ID, address or IP.
func matchesHint(ep cqlconn.Endpoint, hint string) bool {
	if hint == "" {
		return false
	}
	if ep.HostID != "" && strings.EqualFold(ep.HostID, hint) {
		return true
	}
	if ep.Addr == hint {
		return true
	}
	host, _, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return false
	}
	hip, aip := net.ParseIP(hint), net.ParseIP(host)
	return hip != nil && aip != nil && hip.Equal(aip)
}

// HintEndpoint is the endpoint a re-arm's hint names: the known host it matches (by host ID,
// address or IP), else the address it is (port for a bare IP).
func HintEndpoint(hosts []PlanHost, hint string, port int) (cqlconn.Endpoint, bool) {
	for _, h := range hosts {
		if matchesHint(h.Endpoint, hint) {
			return h.Endpoint, true
		}
	}
	return addressEndpoint(hint, port)
}

// addressEndpoint turns a hint that is an address into an endpoint (a host not yet known).
func addressEndpoint(hint string, port int) (cqlconn.Endpoint, bool) {
	if host, p, err := net.SplitHostPort(hint); err == nil {
		if net.ParseIP(host) != nil {
			return cqlconn.Endpoint{Addr: net.JoinHostPort(host, p)}, true
		}
		return cqlconn.Endpoint{}, false
	}
	if ip := net.ParseIP(hint); ip != nil && port > 0 {
		return cqlconn.Endpoint{Addr: net.JoinHostPort(ip.String(), strconv.Itoa(port))}, true
	}
	return cqlconn.Endpoint{}, false
}

// localFirst is a stable partition: hosts of dc, then the others.
func localFirst(hosts []PlanHost, dc string) []PlanHost {
	if dc == "" {
		return hosts
	}
	out := make([]PlanHost, 0, len(hosts))
	for _, h := range hosts {
		if h.DC == dc {
			out = append(out, h)
		}
	}
	for _, h := range hosts {
		if h.DC != dc {
			out = append(out, h)
		}
	}
	return out
}

// sortByWait orders down hosts so the one allowed soonest (the longest-waiting) comes first;
// hosts with no record (believed down, never dialled) come before all.
func sortByWait(hosts []PlanHost, recs map[string]DialRecord) {
	next := func(h PlanHost) time.Time {
		return recs[h.Addr].next
	}
	// stable: hosts with equal times keep their order
	slices.SortStableFunc(hosts, func(a, b PlanHost) int { return next(a).Compare(next(b)) })
}
