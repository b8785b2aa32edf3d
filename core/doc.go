// Package core keeps one control connection to a Cassandra or Scylla cluster, beside a driver's
// session, for topology, status and schema events and cluster metadata. It speaks the native
// protocol itself, recovers through a re-armable backoff driven by the driver's host events,
// dials a host plan staggered so no blackholed host holds recovery hostage, and after every
// reconnect refreshes and diffs the metadata so subscribers lose nothing.
//
// It knows no driver's types: an adapter translates its driver's configuration into an
// adapter.Driver (package controlconn/adapter) and calls New. Applications call an adapter:
// controlconn.New for gocql v1.7.0 (package controlconn, whose names for the types here are
// aliases), gocqlv2.New for gocql v2 (the gocqlv2 module, which compiles no package of gocql
// v1). See docs/using.md, "Adding a driver", for what an adapter provides.
//
// # Data flow
//
//	driver's goroutines --Push--> hostevents.Queue --Batch--> run --drives--> reconnect.Recovery
//	(its listener)                                           |  ^
//	                               attempt goroutine <-start-+  +-link-- (the attempt's result)
//	                               refresh worker    <-start-+  +-tables- (system.local, peers)
//	link reader goroutine ----server events----------------->+ (applied at once; only Recorded on the Queue)
//	run --Refresh/ApplyStatus/SetState--> metadata.Store --Change--> Subscription --> subscriber
//
// Who owns what:
//
//	Recovery, attempt in flight, current link,   run (worker.go; refresh.go, events.go,
//	host table (hosttable.go: beliefs, evidence  hosttable.go, reconcile.go): the only
//	of up, held HostDowns), refresh, probes      goroutine that touches owner
//	events not yet batched, the window           the Queue's batching goroutine (Push, on
//	                                             gocql's goroutines, takes its lock briefly)
//	a link's socket (internal/cqlconn's Conn)    reads: its reader goroutine; writes: one
//	                                             request at a time (writeSem), heartbeats too
//	planHosts (hosts an attempt plans over)      written by run, read by attempts (atomic)
//	Status, current link, up (under pubMu)       written by run, read by callers
//	current Snapshot                             written by run through Store (Store.mu),
//	                                             read by anyone (atomic)
//	a Subscription's channel                     filled by run without blocking (a full one
//	                                             is marked lagged), drained by its subscriber
//
// Callers talk to run through channels (Refresh, ReconnectNow) or read what it publishes
// (Status, WaitConnected); Snapshot and Subscribe go to the Store; Query uses the current link.
// An attempt (attempt.go) orders its hosts with a View of internal/plan's Planner (whose dial
// records are fields of the host table's records, hosttable.go), races them (staggerDial,
// dial.go) with internal/cqlconn's Dial, and reads the system tables on the winner.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields (an alias
// of an internal type lists the members it makes public); TestPublicSurfaceIsDocumented fails
// when this list and the code differ, and when core and metadata together print more than 45
// lines of go doc -short (controlconn and metadata too). It is what an application uses: New and its options, the
// Cadence and Governor it configures, the Observer it hears through, Status, and the errors it
// matches (errors.Is: the Err values; errors.As: ConnError, DialError, ServerError; Classify).
// The wire connection (internal/cqlconn: Dial, Conn, the handshake, its configuration) and the
// host planner (internal/plan) are not part of it; Endpoint, ConnError, ErrorClass and
// ServerError are aliases of cqlconn's types. The dial governor's decision core
// (internal/dialgate) is not part of it either: Governor configures it, GovernorStats counts its
// decisions. New takes an adapter's Driver (controlconn/adapter). What only this module's own
// code uses (a ControlConnection that calls no hook of its driver, a chosen host-event queue
// or random source) is in internal/ccopt.
//
//	Cadence: ConnectTimeout DelayCap HeartbeatInterval HeartbeatTimeout LocalDC
//		MetadataRefreshInterval MinReArmInterval Policy RequestTimeout StableAfter StaggerDelay
//		Validate WithDefaults
//	ClassAuth ClassClosed ClassNone ClassProtocol ClassRetryable ClassTLS Classify
//	ConnError: Addr Class Err Error ErrorClass Op Unwrap
//	ControlConnection: AwaitSchemaAgreement Close GovernorStats Query ReconnectNow Refresh
//		Snapshot Start Status Subscribe WaitConnected
//	DialError: Error ErrorClass Errs Unwrap
//	DialGovernor: Stats
//	Endpoint: Addr DC HostID Hostname String
//	ErrClosed ErrConfigChanged ErrGoverned ErrHeartbeat ErrInvalidConfig ErrLostRace
//	ErrorClass: Permanent String
//	Governor: HostBackoff Jitter MaxInterval MinInterval Off OutageShare StoragePort Validate
//		WithDefaults
//	GovernorStats: Budget Evidence HostSlots Passed Real RefusedBackoff RefusedBudget RefusedReturn
//		SessionFirst StorageProbes
//	New NewDialGovernor
//	Observer: Connected DataPathLag DialFinished DialStarted GovernorDecided GovernorInterval GovernorSetup
//		Heartbeat Lost PeersSkipped Refreshed ReplyDropped ServerEvent
//	Option
//	ServerError: Code Error Message
//	Status: Attempts ConfigChanged ConnectedSince DataPathLag Host LastErr LastErrClass LastLoss
//		LastLossAt NextAttemptAt Recovery SkippedPeers State Version
//	WithDialGovernor WithLogger WithObserver WithQueueConfig WithReconnectObserver
//	WithSharedDialGovernor
package core
