// Package controlconn keeps one control connection to a Cassandra or Scylla cluster, beside a
// gocql session, for topology, status and schema events and cluster metadata. It speaks the
// native protocol itself, recovers through a re-armable backoff driven by gocql's host events,
// dials a host plan staggered so no blackholed host holds recovery hostage, and after every
// reconnect refreshes and diffs the metadata so subscribers lose nothing.
//
// # Data flow
//
//	gocql's goroutines --Push--> hostevents.Queue --Batch--> run --drives--> reconnect.Recovery
//	(the wrapped policy)                                     |  ^
//	                               attempt goroutine <-start-+  +-link-- (the attempt's result)
//	                               refresh worker    <-start-+  +-tables- (system.local, peers)
//	link reader goroutine ----server events----------------->+ (applied at once: not through the Queue)
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
// An attempt (attempt.go) orders its hosts with internal/plan's Planner (which guards its dial
// records with its own lock), races them (staggerDial, dial.go) with internal/cqlconn's Dial,
// and reads the system tables on the winner.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields (an alias
// of an internal type lists the members it makes public); TestPublicSurfaceIsDocumented fails
// when this list and the code differ. The wire connection (internal/cqlconn: Dial, Conn, the
// handshake) and the host planner (internal/plan) are not part of it; Endpoint, ConnConfig,
// ConnError, ErrorClass and ServerError are aliases of cqlconn's types, Resolver of plan's. The
// dial governor's decision core (internal/dialgate) is not part of it either: Governor
// configures it, GovernorStats counts its decisions.
//
//	AllEvents
//	Cadence: ConnectTimeout DelayCap HeartbeatInterval HeartbeatTimeout LocalDC
//		MetadataRefreshInterval MinReArmInterval Policy RequestTimeout StableAfter StaggerDelay
//		Validate WithDefaults
//	ClassAuth ClassClosed ClassNone ClassProtocol ClassRetryable ClassTLS Classify
//	Config: AddressTranslator Cadence Conn ContactPoints Port Validate
//	ConfigFromGocql
//	ConnConfig: AuthProvider Authenticator CQLVersion ConnectTimeout Dialer Events
//		HeartbeatInterval HeartbeatTimeout HostDialer Keepalive Logger MaxFrameSize OnDroppedReply
//		OnHeartbeat ProtoVersion TLS WriteTimeout
//	ConnError: Addr Class Err Error ErrorClass Op Unwrap
//	ControlConnection: AwaitSchemaAgreement Close GovernorStats Query ReconnectNow Refresh
//		SkippedPeers Snapshot Start Status Subscribe WaitConnected
//	DataObserver: PeersSkipped ReplyDropped
//	DataPathObserver: DataPathLag
//	DefaultConnectTimeout DefaultGovernorHostBackoff DefaultGovernorJitter
//	DefaultGovernorMinInterval DefaultGovernorOutageShare DefaultHeartbeatInterval
//	DefaultHeartbeatTimeout DefaultKeepalive DefaultMaxFrameSize DefaultMetadataRefreshInterval
//	DefaultPort DefaultRequestTimeout DefaultStaggerDelay DefaultWriteTimeout
//	DialError: Error ErrorClass Errs Unwrap
//	DialGovernor: Stats
//	DriverGate: Admit Done SetReconnectInterval
//	Endpoint: Addr DC HostID Hostname String
//	ErrClosed ErrConfigChanged ErrConflictingOptions ErrGoverned ErrHeartbeat ErrInvalidCadence
//	ErrInvalidGovernor ErrLostRace
//	ErrorClass: Permanent String
//	GovernedReconnectInterval
//	Governor: HostBackoff Jitter MaxInterval MinInterval OutageShare Validate WithDefaults
//	GovernorObserver: GovernorDecided GovernorInterval
//	GovernorStats: Budget Evidence HostSlots Passed Real RefusedBackoff RefusedBudget
//		SessionFirst
//	IsServerError MinRefreshInterval New NewDialGovernor NewWithConfig NewWithListener
//	NopObserver: Connected DialFinished DialStarted Heartbeat Lost Refreshed ServerEvent
//	Observer: Connected DialFinished DialStarted Heartbeat Lost Refreshed ServerEvent
//	Option ProtocolMaxFrameSize Resolver
//	ServerError: Code Error Message
//	Status: Attempts ConfigChanged ConnectedSince DataPathLag Host LastErr LastErrClass LastLoss
//		LastLossAt NextAttemptAt Recovery SkippedPeers State Version
//	WithConfigCheck WithDialGovernor WithDriverGate WithHostEvents WithLogger WithObserver
//	WithQueueConfig WithReconnectObserver WithResolver WithSharedDialGovernor
package controlconn
