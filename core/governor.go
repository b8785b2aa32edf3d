package core

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of Governor fields.
const (
	defaultGovernorMinInterval = 1200 * time.Millisecond
	defaultGovernorOutageShare = 1.0 / 50
	defaultGovernorJitter      = 0.1
	defaultGovernorHostBackoff = time.Second
)

// Governor configures the dial governor that New (and gocqlv2.New) install on the driver's
// config by default; WithDialGovernor configures it, or turns it off (Off), and
// NewDialGovernor with WithSharedDialGovernor shares one. Every dial of the process,
// gocql's (control connection and pools) and ours, goes through it. The zero value of every
// field means its default, so Governor{} is the documented default:
//
//	MinInterval  1.2 s  the client-wide budget's interval between real dials for the first
//	                    minute of an outage (divided by hosts ÷ 3 past three hosts, so that a
//	                    host's turn comes every 3 intervals at any cluster size)
//	OutageShare  1/50   the interval grows to this share of the outage's length so far (from
//	                    60 s on), so being late costs ~2 % of the outage, and a 1 h outage
//	                    costs ~290 real dials per process (287 measured in virtual time,
//	                    3 nodes; × hosts ÷ 3 past three hosts)
//	MaxInterval  DelayCap of the Cadence (30 s by default): the interval never exceeds it
//	Jitter       0.1    ± fraction of each interval; the second real dial of an outage comes at
//	                    a random moment within the first interval, so clients that lost the
//	                    cluster together dial apart from then on
//	HostBackoff  1 s    a host whose dials failed gets its next real dial this much later,
//	                    doubling per failure up to MaxInterval
//	StoragePort  0      off; Cassandra's storage_port (7000 unless configured) turns the
//	                    storage watch on (the field says what it does)
//
// The rule, in 120 words (as in docs/governor.md; the next paragraph gives every case):
//
// One governor per process admits every dial (gocql's, ours); hosts believed up pass. Known-down
// hosts get one dial per backoff: 1 s doubling per failure, MaxInterval after DOWN; UP or a
// connection opens them. While ours is down, dials share a budget growing with the outage (1/50 of
// it, 1.2 s to MaxInterval, ÷ hosts/3 past 3, jittered), slots to the longest-due host; the first
// connecting re-arms ours. With StoragePort, hosts whose storage port accepted while up leave the
// budget: one dial per MaxInterval while it refuses, per second once open. Returning hosts admit
// one setup, one more per quick success, open at 4; slow, timed-out, overloaded setups halve the
// limit and pause. Pools first. Refusals send nothing, convict nothing.
//
// The rules, in one paragraph (docs/governor.md has the same; package internal/dialgate, the
// decision core, has no rule this paragraph lacks). While our connection is up, a dial to a host
// believed up or unknown passes untouched; a dial to a host known down (a failed dial, an
// announced DOWN, or the loss of our connection to it) is real at most once per that host's
// backoff: HostBackoff doubling per failed dial, or MaxInterval for a host announced DOWN or lost
// from, which its UP announcement, a dial that connects to it, or our probe opens at once (the
// slots only cover a missed announcement). Our probes are dials like gocql's and take a
// known-down host's slot, except that a host to verify after a reconnection (announced DOWN
// before it, or lost from) is probed at once. When our connection is lost, the cluster is
// presumed reachable until a dial to another host fails: hosts not known down pass, the host it
// was lost from waits HostBackoff, and a dial that connects meanwhile is no evidence (our
// recovery is dialling already). While our connection is down and the cluster unreachable as far
// as we know, a real dial also needs the process-wide budget: the first at once, each next one
// interval later (OutageShare of the outage so far, within MinInterval and MaxInterval, divided
// by (number of hosts) ÷ 3 past three hosts, ±Jitter; the second at a random moment within the
// first interval), and a known-down host's backoff restarts and is at most (number of hosts) ×
// interval × (1 − Jitter), so the budget rotates over the hosts and a slot never waits for a
// host to be due; a slot goes to the host due longest (one not dialled yet in the outage first)
// of those the driver asked for within the last second, waiting at most 250 ms for it, so a
// host's turn comes every three intervals at any cluster size. The first dial that connects
// during the outage is evidence that re-arms our connection and proves the cluster reachable:
// until our connection is back, every host not known down passes at once and a known-down host
// gets its real dials on its own backoff.
// With StoragePort, the governor probes storage ports (the host's address, that port) with a TCP
// connect that sends nothing, unanswered within 1 s counting as refused: a host not known down
// once per up spell until one accepts (the host is watched from then on), and while our
// connection is down a watched known-down host every 3 s (1/50 of the outage past it, up to
// MaxInterval, ±Jitter). While ours is down, a watched known-down host's real dials take no
// budget slot: one per MaxInterval while its storage port refuses, one at once when it accepts,
// then one per second (1/50 of the time since it opened past it, up to MaxInterval).
// A failed dial of ours ends a presumption but makes no host known down, since ours may
// be cut off alone. When our connection is back, the hosts it believes up are open at once,
// except the host it was lost from, which gets one real dial HostBackoff later (gossip may not
// have noticed it stopping); a host known down by failed dials or an earlier announcement gets
// one real dial at once. Refused dials fail at once with a non-temporary *net.OpError wrapping
// ErrGoverned, send nothing, and never count as a failure in gocql's ConvictionPolicy (New wraps
// the one configured). A gocql session's dials are not governed until one of its pool
// connections has connected, so CreateSession succeeds whenever gocql alone would. After Close
// (of every ControlConnection sharing the governor) a host whose last real dial failed gets one
// real dial per gocql's ReconnectInterval as the user configured it (New shortens gocql's
// default), and every other dial passes. The governor keeps records only of the hosts of the latest metadata.
// The return: a host that accepts a driver's dial after it was known down (or is announced UP)
// admits the driver's connection setups one in flight, one more per setup ready within 1 s,
// open at 4; a slow or timed-out setup, Overloaded or "Unable to perform authentication"
// halves the limit and pauses the host's setups: until a pool setup there was ready, for a
// random part of a window doubling per signal from 100 ms (a login the server dropped from its
// queue is retried soon, keeping the client's place in line); once one was, for half to all of
// a window of 8 times as long as the host has been slow (since its slow spell began: a quick
// login or a quiet gap after its pause ends the spell),
// up to 5 minutes (the served client's other setups wait for the clients queued behind it,
// ours too, past DelayCap). A
// setup holds the next at most 21 s, and a host known down forgets its setups in flight. The data path first: ours (while down) and gocql's own control
// connection wait for the driver's first pool setup to a returning host (while the client
// serves nowhere, for as long as the driver asks for one there) and for its pause, and
// take no setup slot until the client is served there (then ours holds one until its own
// setup ends); ours is re-armed for that host when the driver's setup ends.
type Governor struct {
	// Off turns the governor off: WithDialGovernor(Governor{Off: true}) is the one way to opt
	// out of what New and gocqlv2.New install by default. The driver's sessions then dial as
	// gocql alone does: every down host every ReconnectInterval, and every pool connection at
	// once when a node returns. Nothing is installed on the driver's HostDialer,
	// ConvictionPolicy or ReconnectInterval. The other fields must be zero with it.
	Off bool

	MinInterval time.Duration
	OutageShare float64
	MaxInterval time.Duration
	Jitter      float64
	HostBackoff time.Duration

	// StoragePort turns the storage watch on (0, the default, leaves it off): the governor
	// probes each host's storage (internode) port, at the address it dials for CQL, with a TCP
	// connect that sends nothing (Cassandra's storage_port, 7000 unless configured). A host
	// whose storage port accepted while it was up is watched: while ours is down and the host
	// is known down, its real dials follow that port, not the budget. While the port refuses
	// (the node's JVM is not listening, so its CQL port cannot be open either) the host gets
	// one real dial per MaxInterval; once it accepts (Cassandra 5.0.8 listens there 2.4-49.6 s
	// before it answers CQL, docs/governor.md), one at once, then one per second (1/50 of the
	// time since it opened, up to MaxInterval). The storage port is probed every 2 s, growing
	// as the budget's interval does (1/50 of the outage so far, up to MaxInterval, ±Jitter),
	// and once per up spell for a host not yet watched. A host whose storage port never
	// accepted while it was up (a firewall, a listen_address other than the rpc_address)
	// stays on the budget.
	StoragePort int
}

// WithDefaults returns g with every zero field replaced by its default; a zero MaxInterval
// becomes delayCap (the Cadence's DelayCap; reconnect's default when zero).
func (g Governor) WithDefaults(delayCap time.Duration) Governor {
	if g.MinInterval == 0 {
		g.MinInterval = defaultGovernorMinInterval
	}
	if g.OutageShare == 0 {
		g.OutageShare = defaultGovernorOutageShare
	}
	if g.MaxInterval == 0 {
		g.MaxInterval = delayCap
		if g.MaxInterval <= 0 {
			g.MaxInterval = Cadence{}.WithDefaults().DelayCap
		}
	}
	if g.Jitter == 0 {
		g.Jitter = defaultGovernorJitter
	}
	if g.HostBackoff == 0 {
		g.HostBackoff = defaultGovernorHostBackoff
	}
	return g
}

// Validate reports every invalid field (zero fields are valid: they mean the default). All
// errors wrap ErrInvalidConfig.
func (g Governor) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: Governor."+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if g.MinInterval < 0 {
		bad("MinInterval must be positive (or zero for the default 1.2s), got %v", g.MinInterval)
	}
	if g.MaxInterval < 0 {
		bad("MaxInterval must be positive (or zero for the Cadence's DelayCap), got %v", g.MaxInterval)
	}
	if g.MinInterval > 0 && g.MaxInterval > 0 && g.MaxInterval < g.MinInterval {
		bad("MaxInterval (%v) must not be shorter than MinInterval (%v)", g.MaxInterval, g.MinInterval)
	}
	if math.IsNaN(g.OutageShare) || math.IsInf(g.OutageShare, 0) || g.OutageShare < 0 || g.OutageShare > 1 {
		bad("OutageShare must be in (0, 1] (or zero for the default 1/50), got %v", g.OutageShare)
	}
	if math.IsNaN(g.Jitter) || g.Jitter < 0 || g.Jitter >= 1 {
		bad("Jitter must be in [0, 1) (zero means the default 0.1), got %v", g.Jitter)
	}
	if g.HostBackoff < 0 {
		bad("HostBackoff must be positive (or zero for the default 1s), got %v", g.HostBackoff)
	}
	if g.StoragePort < 0 || g.StoragePort > 65535 {
		bad("StoragePort must be a TCP port, 1-65535 (or zero: no storage watch), got %d", g.StoragePort)
	}
	if g.Off && (g != Governor{Off: true}) {
		bad("Off turns the governor off: its other fields must be zero, got %+v", g)
	}
	return errors.Join(errs...)
}

// DialGovernor is a dial governor that several ControlConnections of one process share
// (WithSharedDialGovernor), so that the process, not each ControlConnection, has one budget:
// for example two gocql.ClusterConfig values for one cluster, one per keyspace or consistency. Its
// connection to the cluster counts as up while any of theirs is, and a dial that connects while
// all are down re-arms each of them.
type DialGovernor struct{ g *dialGovernor }

// NewDialGovernor returns a governor configured by g (Governor{} is the default; a zero
// MaxInterval is the default Cadence's DelayCap, 30 s) for WithSharedDialGovernor.
func NewDialGovernor(g Governor) (*DialGovernor, error) {
	gov, err := newDialGovernor(g, 0, nil, nil)
	if err != nil {
		return nil, err
	}
	return &DialGovernor{g: gov}, nil
}

// Stats returns the counters of every dial the governor decided on, for every ControlConnection
// and session that shares it.
func (d *DialGovernor) Stats() GovernorStats { return d.g.Stats() }

// WithSharedDialGovernor is WithDialGovernor with a governor shared by every ControlConnection
// built with it (see DialGovernor): New (and gocqlv2.New) install it on their driver config as
// WithDialGovernor does, each with the config's own dialer and reconnect interval. With
// WithDialGovernor, or with a nil governor, it is an error wrapping ErrInvalidConfig.
//
// What is governed: the dials of this ControlConnection, and of every session created from the
// config passed to New after New returns (New sets its HostDialer). What is not: a session
// created from that config before New, or from a copy of the config made before New (gocql
// copies ClusterConfig by value: the copy keeps the dialer it had), and any dial that does not
// go through gocql's HostDialer.
func WithSharedDialGovernor(g *DialGovernor) Option {
	if g == nil {
		g = &DialGovernor{} // refused by the constructor
	}
	return func(o *options) { o.shared = g }
}

// dialGovernor returns the governor the options ask for: WithSharedDialGovernor's, a new one
// for WithDialGovernor or by default (Governor{}), or nil for WithDialGovernor(Governor{Off:
// true}).
func (o *options) dialGovernor(delayCap time.Duration) (*dialGovernor, error) {
	off := o.governor != nil && o.governor.Off
	switch {
	case off && o.shared != nil:
		return nil, fmt.Errorf("%w: conflicting options: WithDialGovernor(Governor{Off: true}) turns the governor off, WithSharedDialGovernor shares one: use one of them", ErrInvalidConfig)
	case off:
		return nil, o.governor.Validate()
	case o.governor != nil && o.shared != nil:
		return nil, fmt.Errorf("%w: conflicting options: WithDialGovernor makes a governor, WithSharedDialGovernor shares one: use one of them", ErrInvalidConfig)
	case o.shared != nil:
		if o.shared.g == nil {
			return nil, fmt.Errorf("%w: conflicting options: WithSharedDialGovernor needs a governor made by NewDialGovernor", ErrInvalidConfig)
		}
		return o.shared.g, nil
	case o.governor != nil:
		return newDialGovernor(*o.governor, delayCap, o.rand, nil)
	}
	return newDialGovernor(Governor{}, delayCap, o.rand, nil)
}
