package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// DefaultNamespace prefixes every metric name unless Options.Namespace says otherwise.
const DefaultNamespace = "cqlcontrol"

// Native histogram settings, used alongside the classic buckets: about 10 % resolution,
// at most 160 buckets per histogram, and a bucket reset no more than once an hour when a
// histogram outgrows them.
const (
	nativeBucketFactor     = 1.1
	nativeMaxBucketNumber  = 160
	nativeMinResetDuration = time.Hour
)

// Classic bucket bounds, in seconds. Native histograms (about 10 % resolution) carry the fine
// detail; the classic bounds are round numbers that include the contract's figures, so that
// "within 3 s" (a short restart) and "within 30 s" (the default delay cap) are exact queries on
// le="3" and le="30".
var (
	// latencyBuckets span a loopback handshake (1 ms) to the Python driver's 600 s backoff
	// ceiling: 22 bounds.
	latencyBuckets = []float64{
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
		1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 120, 300, 600,
	}
	// uptimeBuckets span a flap (10 ms) to a week, with reconnect.DefaultStableAfter (10 s),
	// the flap/stable boundary, among them: 13 bounds.
	uptimeBuckets = []float64{0.01, 0.1, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400, 604800}
)

// Options configures New. The zero value is valid: metrics named cqlcontrol_*, registered
// only in a registry private to the Collectors.
type Options struct {
	// Namespace is the first part of every metric name; "" means DefaultNamespace.
	Namespace string
	// Subsystem, if set, goes between the namespace and the name: cqlcontrol_<subsystem>_...
	Subsystem string
	// Registerer, if set, gets every collector registered too (pass
	// prometheus.DefaultRegisterer to expose them on the global /metrics). Nil registers
	// nothing outside the Collectors' private registry.
	Registerer prometheus.Registerer
	// ConstLabels are added to every metric, e.g. {"cluster": "orders"} to tell several
	// control connections apart in one registry. They must not reuse a label name of ours.
	ConstLabels prometheus.Labels
}

// Collectors holds the control connection's metrics. It implements reconnect.Observer and
// hostevents.QueueObserver, and Observer makes its core.Observer; all methods are safe
// for concurrent use and never block. One Collectors observes one control connection: its
// state gauge and its initial-connection detection assume a single reconnect.Recovery (use
// Subsystem or ConstLabels to tell several apart).
type Collectors struct {
	gatherer prometheus.Gatherer    // the private registry holding exactly the metrics below
	all      []prometheus.Collector // every metric, in creation order
	handler  http.Handler

	// Reconnection (reconnect.Observer).
	recovery        prometheus.Histogram
	reaction        prometheus.Histogram
	initialConnect  prometheus.Gauge
	attemptsStarted *prometheus.CounterVec   // trigger
	attempts        *prometheus.CounterVec   // outcome
	attemptDuration *prometheus.HistogramVec // outcome
	rearms          *prometheus.CounterVec   // reason
	rearmsSupp      *prometheus.CounterVec   // reason, why
	state           *prometheus.GaugeVec     // state
	nextDelay       prometheus.Gauge
	delayCap        prometheus.Gauge
	delaysCapped    prometheus.Counter

	// Host events (hostevents.QueueObserver).
	hostEvents      *prometheus.CounterVec // type, source
	eventsCoalesced prometheus.Counter
	eventsDropped   prometheus.Counter

	// Connection (core.Observer).
	dialsStarted     prometheus.Counter
	dials            *prometheus.CounterVec   // outcome
	dialDuration     *prometheus.HistogramVec // outcome
	controlHost      *prometheus.GaugeVec     // addr, host_id, protocol_version
	connectionsLost  *prometheus.CounterVec   // class
	connectionUptime prometheus.Histogram
	heartbeatRTT     prometheus.Histogram
	heartbeatFails   prometheus.Counter
	refreshes        *prometheus.CounterVec // outcome
	refreshDuration  prometheus.Histogram
	metadataChanges  prometheus.Counter
	serverEvents     *prometheus.CounterVec // kind, change

	// Bad data left out (core.Observer.PeersSkipped, ReplyDropped).
	peersSkipped   prometheus.Counter
	repliesDropped prometheus.Counter

	// gocql's data path (core.Observer.DataPathLag).
	dataPathLag prometheus.Histogram

	// The dial governor (core.Observer.GovernorDecided, GovernorInterval).
	governorDials    *prometheus.CounterVec        // verdict
	governorVerdicts map[string]prometheus.Counter // governorDials by verdict, resolved once: read-only
	governorEvidence prometheus.Counter
	governorInterval prometheus.Gauge
	governorSetup    *prometheus.HistogramVec // outcome

	// starting is set when a Recovery leaves Idle and cleared by the Recovered that follows:
	// the first connection ends no outage, so it is kept out of recovery_seconds. Written by
	// the goroutine driving the Recovery.
	starting atomic.Bool

	// stateMu serialises state-gauge updates so that exactly one state reads 1 even if two
	// Recoveries were (wrongly) to share these Collectors. cur is guarded by it.
	stateMu sync.Mutex
	cur     reconnect.State

	// hostMu guards hostLabels: the label values of the one control_host_info series, nil
	// while not connected. Connected and Lost come from the ControlConnection's goroutine.
	hostMu     sync.Mutex
	hostLabels []string
}

var (
	_ reconnect.Observer       = (*Collectors)(nil)
	_ hostevents.QueueObserver = (*Collectors)(nil)
)

// ErrInvalidOptions is wrapped by every error New returns for invalid Options.
var ErrInvalidOptions = errors.New("metrics: invalid options")

// identifier is what Namespace, Subsystem and constant label names must look like: a
// classic Prometheus name, so that every metric name stays lintable and queryable unquoted.
var identifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Label names of our own metrics; ConstLabels must not reuse them.
var labelNames = []string{
	"trigger", "outcome", "reason", "why", "state", "type", "source", "addr", "host_id",
	"protocol_version", "class", "kind", "change", "le", "verdict",
}

// Label values known in advance: their series are created at zero so that rate() and
// absent() see them before the first event.
var (
	outcomes     = []reconnect.Outcome{reconnect.OutcomeSuccess, reconnect.OutcomeFailure, reconnect.OutcomeNonRetryable, reconnect.OutcomeCanceled, reconnect.OutcomeDiscarded}
	reasons      = []reconnect.Reason{reconnect.ReasonHostUp, reconnect.ReasonHostAdded, reconnect.ReasonEvent, reconnect.ReasonManual}
	suppressions = []reconnect.Suppression{reconnect.SuppressRateLimited, reconnect.SuppressCoalesced, reconnect.SuppressConnected, reconnect.SuppressClosed}
	states       = []reconnect.State{reconnect.StateIdle, reconnect.StateAttempting, reconnect.StateScheduled, reconnect.StateConnected, reconnect.StateClosed}
	kinds        = []hostevents.Kind{hostevents.KindUp, hostevents.KindDown, hostevents.KindAdded, hostevents.KindRemoved}
	sources      = []hostevents.Source{hostevents.SourceGocql, hostevents.SourceControl}
	dialOutcomes = []string{dialSuccess, dialLostRace, core.ClassRetryable.String(), core.ClassAuth.String(), core.ClassProtocol.String(), core.ClassTLS.String(), core.ClassClosed.String()}
	verdicts     = []string{"pass", "host_slot", "budget", "session_first", "host_backoff", "no_budget", "setup_limit", "slow_down"}
	lostClasses  = []core.ErrorClass{core.ClassNone, core.ClassRetryable, core.ClassAuth, core.ClassProtocol, core.ClassTLS, core.ClassClosed}
)

// Trigger label values of attempts_started_total.
const (
	triggerBlind = "blind" // the blind schedule's timer
	triggerReArm = "rearm" // a re-arm: evidence the cluster is back
)

// New creates the collectors and registers them in a private registry (served by Handler
// and Gatherer) and, if opts.Registerer is set, there too. It returns an error, having
// registered nothing in opts.Registerer, if the options are invalid or the registration
// fails (for example the same names are already registered there).
func New(opts Options) (*Collectors, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	own := prometheus.NewRegistry()
	c := &Collectors{gatherer: own}
	b := builder{f: promauto.With(own), o: opts, c: c}

	c.recovery = b.histogram("recovery_seconds", latencyBuckets,
		"Time from losing the control connection to being connected again, observed once per recovery when its attempt succeeds. The first connection after start is not a recovery; see initial_connect_seconds.")
	c.reaction = b.histogram("reaction_seconds", latencyBuckets,
		"Time from the first evidence that the cluster was back (the first re-arm of the outage) to being connected again, observed once per recovery that had evidence.")
	c.initialConnect = b.gauge("initial_connect_seconds",
		"Time from starting the control connection to its first connection; 0 until then.")
	c.attemptsStarted = b.counterVec("attempts_started_total",
		"Connection attempts started, by trigger: blind (the backoff timer) or rearm (evidence that the cluster is back).", "trigger")
	c.attempts = b.counterVec("attempts_total",
		"Connection attempts finished, by outcome: success, failure, non_retryable (retried no faster than the delay cap), canceled (failed after close), discarded (succeeded after close).", "outcome")
	c.attemptDuration = b.histogramVec("attempt_duration_seconds", latencyBuckets,
		"Duration of connection attempts, from start to outcome, observed when each attempt finishes, by outcome.", "outcome")
	c.rearms = b.counterVec("rearms_total",
		"Re-arms accepted: evidence (host up, host added, event, manual) that moved the next attempt ahead of the blind backoff timer, by reason.", "reason")
	c.rearmsSupp = b.counterVec("rearms_suppressed_total",
		"Re-arms that started no attempt of their own, by reason and why: rate_limited (the rate limit or a non-retryable error allows no earlier attempt than the blind timer), coalesced (merged into an attempt already due or running), connected, closed.", "reason", "why")
	c.state = b.gaugeVec("state",
		"Reconnection state: 1 for the current state (idle, attempting, scheduled, connected, closed), 0 for the others.", "state")
	c.nextDelay = b.gauge("next_delay_seconds",
		"Wait chosen before the next blind attempt, set whenever the backoff timer is set (0 for the immediate first attempt of a recovery) and reset to 0 once connected or closed.")
	c.delayCap = b.gauge("delay_cap_seconds",
		"The configured delay cap: no blind wait is longer, and a non-retryable error waits at least this long. Set from the configuration, and from every capped delay.")
	c.delaysCapped = b.counter("delays_capped_total",
		"Blind delays that the delay cap shortened (or a non-retryable error lengthened to it).")

	c.hostEvents = b.counterVec("host_events_total",
		"Host events received by the event queue, by type (up, down, added, removed) and source (gocql: the driver's callbacks, control: our own connection's server events).", "type", "source")
	c.eventsCoalesced = b.counter("events_coalesced_total",
		"Host events merged into a waiting event of the same host instead of queued.")
	c.eventsDropped = b.counter("events_dropped_total",
		"Host events refused by the event queue: a new host beyond its host limit, an event without host key, or one after close.")

	c.dialsStarted = b.counter("dials_started_total",
		"Dials of one host started; an attempt may dial several, staggered.")
	c.dials = b.counterVec("dials_total",
		"Dials of one host finished, by outcome: success (won the attempt), lost_race (another host answered first), or the failure's class (retryable, auth, protocol, tls, closed).", "outcome")
	c.dialDuration = b.histogramVec("dial_duration_seconds", latencyBuckets,
		"Duration of dials of one host, observed when each finishes, by outcome.", "outcome")
	c.controlHost = b.gaugeVec("control_host_info",
		"1 for the host the control connection is connected to, with its address, host ID and native protocol version; no series while disconnected.", "addr", "host_id", "protocol_version")
	c.connectionsLost = b.counterVec("connections_lost_total",
		"Control connections lost, by the class of the error that ended them (none, retryable, auth, protocol, tls, closed).", "class")
	c.connectionUptime = b.histogram("connection_uptime_seconds", uptimeBuckets,
		"How long each lost control connection had been up, observed when it is lost; short uptimes are flaps.")
	c.heartbeatRTT = b.histogram("heartbeat_rtt_seconds", latencyBuckets,
		"Round-trip time of successful heartbeats (OPTIONS) on the control connection.")
	c.heartbeatFails = b.counter("heartbeat_failures_total",
		"Heartbeats that failed or timed out; each one ends the control connection.")
	c.refreshes = b.counterVec("metadata_refreshes_total",
		"Metadata refreshes (system tables read, diffed and published) finished, by outcome: success or failure.", "outcome")
	c.refreshDuration = b.histogram("metadata_refresh_seconds", latencyBuckets,
		"Duration of metadata refreshes, observed when each finishes.")
	c.metadataChanges = b.counter("metadata_changes_total",
		"Metadata changes (hosts, tokens, schema) published by refreshes.")
	c.serverEvents = b.counterVec("server_events_total",
		"Events pushed by the server on the control connection, by kind (topology_change, status_change, schema_change) and change (NEW_NODE, UP, CREATED, ...).", "kind", "change")
	c.peersSkipped = b.counter("peers_skipped_total",
		"system.peers rows left out of metadata refreshes (bad token, undecodable value, duplicate host or token), counted at every refresh that skips them.")
	c.repliesDropped = b.counter("replies_dropped_total",
		"Responses dropped because no request was in flight on their stream (late duplicates from a broken server or proxy).")
	c.dataPathLag = b.histogram("data_path_lag_seconds", latencyBuckets,
		"Per host: from the control connection seeing the host announced UP to gocql's session reporting its pool connected to it (HostUp).")
	c.governorDials = b.counterVec("governor_dials_total",
		"Dials the dial governor decided on (gocql's and ours), by verdict: made (pass: untouched; host_slot: a known-down host's one dial per backoff; budget: paid from the process-wide budget; session_first: a gocql session's dial before any of its dials connected, not governed) or refused, nothing sent (host_backoff: a known-down host within its backoff; no_budget: the budget's next dial is later; setup_limit: a returning host has as many setups in flight as its limit; slow_down: a returning host showed it is slow to set connections up, and its jittered pause runs); with Governor.StoragePort, storage_open and storage_closed count probes of a storage port: TCP connects, no CQL).", "verdict")
	c.governorSetup = b.histogramVec("governor_setup_seconds", latencyBuckets,
		"The driver's connection setups (connect, STARTUP, login), from start to ready or failure, by outcome: ok, busy (a timeout, Overloaded or \"Unable to perform authentication\": the server is behind, the host's setups slow down) or failed.", "outcome")
	c.governorEvidence = b.counter("governor_evidence_total",
		"Governed dials that connected while our connection was down and the cluster unreachable as far as the governor knew: evidence that re-armed our connection.")
	c.governorInterval = b.gauge("governor_interval_seconds",
		"The dial governor's budget interval between real dials: 0 while the budget does not apply (our connection up, or the cluster known reachable); it grows with the outage (1/50 of it, from 1.2 s up to the delay cap).")

	c.initialise()
	if opts.Registerer != nil {
		if err := registerAll(opts.Registerer, c.all); err != nil {
			return nil, err
		}
	}
	c.handler = promhttp.HandlerFor(own, promhttp.HandlerOpts{})
	return c, nil
}

// initialise creates the series of every label value known in advance, at zero.
func (c *Collectors) initialise() {
	for _, o := range outcomes {
		c.attempts.WithLabelValues(string(o))
	}
	c.attemptsStarted.WithLabelValues(triggerBlind)
	c.attemptsStarted.WithLabelValues(triggerReArm)
	for _, r := range reasons {
		c.rearms.WithLabelValues(string(r))
		for _, why := range suppressions {
			c.rearmsSupp.WithLabelValues(string(r), string(why))
		}
	}
	for _, s := range states {
		c.state.WithLabelValues(s.String())
	}
	c.state.WithLabelValues(reconnect.StateIdle.String()).Set(1)
	c.delayCap.Set(reconnect.DefaultDelayCap.Seconds())
	for _, k := range kinds {
		for _, s := range sources {
			c.hostEvents.WithLabelValues(k.String(), string(s))
		}
	}
	for _, o := range dialOutcomes {
		c.dials.WithLabelValues(o)
	}
	for _, cl := range lostClasses {
		c.connectionsLost.WithLabelValues(cl.String())
	}
	c.refreshes.WithLabelValues(refreshSuccess)
	c.refreshes.WithLabelValues(refreshFailure)
	c.governorVerdicts = make(map[string]prometheus.Counter, len(verdicts))
	for _, v := range verdicts {
		c.governorVerdicts[v] = c.governorDials.WithLabelValues(v)
	}
}

// Gatherer gathers exactly the Collectors' metrics, from their private registry, whatever
// Options.Registerer was.
func (c *Collectors) Gatherer() prometheus.Gatherer { return c.gatherer }

// Handler serves the Collectors' metrics (Gatherer) in every exposition format Prometheus
// negotiates, protobuf included, which native histograms need. Mount it on /metrics.
func (c *Collectors) Handler() http.Handler { return c.handler }

// SetDelayCap records the configured delay cap (reconnect.Config.DelayCap, or
// core.Cadence.DelayCap) for delay_cap_seconds. It starts at reconnect.DefaultDelayCap,
// the cap of a zero configuration, and every capped delay sets it too.
func (c *Collectors) SetDelayCap(d time.Duration) { c.delayCap.Set(d.Seconds()) }

// DelayCapSet implements reconnect.CapObserver: a Recovery observed by c sets
// delay_cap_seconds to its configured cap when it is built.
func (c *Collectors) DelayCapSet(d time.Duration) { c.SetDelayCap(d) }

func (o Options) validate() error {
	var errs []error
	for _, part := range []struct{ field, v string }{{"Namespace", o.Namespace}, {"Subsystem", o.Subsystem}} {
		if part.v != "" && !identifier.MatchString(part.v) {
			errs = append(errs, fmt.Errorf("%w: %s %q is not of the form [a-zA-Z_][a-zA-Z0-9_]*", ErrInvalidOptions, part.field, part.v))
		}
	}
	for name := range o.ConstLabels {
		switch {
		case !identifier.MatchString(name) || strings.HasPrefix(name, "__"):
			errs = append(errs, fmt.Errorf("%w: constant label name %q is not a valid label name", ErrInvalidOptions, name))
		case slices.Contains(labelNames, name):
			errs = append(errs, fmt.Errorf("%w: constant label %q is a label of our own metrics", ErrInvalidOptions, name))
		}
	}
	return errors.Join(errs...)
}

// registerAll registers every collector in reg, or none: on the first failure it
// unregisters those it registered and returns the error.
func registerAll(reg prometheus.Registerer, all []prometheus.Collector) error {
	for i, m := range all {
		if err := reg.Register(m); err != nil {
			for _, done := range all[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("metrics: registering in Options.Registerer: %w", err)
		}
	}
	return nil
}

// builder creates metrics with the shared options, registers them in the private registry
// (promauto panics on a clash, which fixed names and validated options rule out) and keeps
// them for registerAll.
type builder struct {
	f promauto.Factory
	o Options
	c *Collectors
}

func (b builder) keep(m prometheus.Collector) { b.c.all = append(b.c.all, m) }

func (b builder) counter(name, help string) prometheus.Counter {
	m := b.f.NewCounter(prometheus.CounterOpts{Namespace: b.o.Namespace, Subsystem: b.o.Subsystem, Name: name, Help: help, ConstLabels: b.o.ConstLabels})
	b.keep(m)
	return m
}

func (b builder) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	m := b.f.NewCounterVec(prometheus.CounterOpts{Namespace: b.o.Namespace, Subsystem: b.o.Subsystem, Name: name, Help: help, ConstLabels: b.o.ConstLabels}, labels)
	b.keep(m)
	return m
}

func (b builder) gauge(name, help string) prometheus.Gauge {
	m := b.f.NewGauge(prometheus.GaugeOpts{Namespace: b.o.Namespace, Subsystem: b.o.Subsystem, Name: name, Help: help, ConstLabels: b.o.ConstLabels})
	b.keep(m)
	return m
}

func (b builder) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	m := b.f.NewGaugeVec(prometheus.GaugeOpts{Namespace: b.o.Namespace, Subsystem: b.o.Subsystem, Name: name, Help: help, ConstLabels: b.o.ConstLabels}, labels)
	b.keep(m)
	return m
}

func (b builder) histogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{
		Namespace: b.o.Namespace, Subsystem: b.o.Subsystem, Name: name, Help: help, ConstLabels: b.o.ConstLabels,
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     nativeBucketFactor,
		NativeHistogramMaxBucketNumber:  nativeMaxBucketNumber,
		NativeHistogramMinResetDuration: nativeMinResetDuration,
	}
}

func (b builder) histogram(name string, buckets []float64, help string) prometheus.Histogram {
	m := b.f.NewHistogram(b.histogramOpts(name, help, buckets))
	b.keep(m)
	return m
}

func (b builder) histogramVec(name string, buckets []float64, help string, labels ...string) *prometheus.HistogramVec {
	m := b.f.NewHistogramVec(b.histogramOpts(name, help, buckets), labels)
	b.keep(m)
	return m
}

// seconds converts a duration for an observation; a negative one (a clock oddity) is 0.
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }
