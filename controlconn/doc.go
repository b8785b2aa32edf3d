// Package controlconn plugs cqlcontrol's control connection into gocql v1.7.0
// (github.com/gocql/gocql): New translates the gocql ClusterConfig the application already has
// and installs the host-event listener, the governed dialer and the rest on it (see New). The
// control connection itself is the driver-neutral package core: every type here is an alias of
// core's, and every option builds core's option, so a program that names controlconn's types
// and one that names core's use the same values. gocql v2 programs use the gocqlv2 module
// instead, which builds on core alone.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields (an alias
// lists the members it makes public); TestPublicSurfaceIsDocumented fails when this list and the
// code differ, and when controlconn and metadata together print more than 45 lines of go doc
// -short.
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
//	GovernorStats: Budget Evidence HostSlots Passed Real RefusedBackoff RefusedBudget
//		RefusedReturn SessionFirst StorageProbes
//	New NewDialGovernor
//	Observer: Connected DataPathLag DialFinished DialStarted GovernorDecided GovernorInterval
//		GovernorSetup Heartbeat Lost PeersSkipped Refreshed ReplyDropped ServerEvent
//	Option
//	ServerError: Code Error Message
//	Status: Attempts ConfigChanged ConnectedSince DataPathLag Host LastErr LastErrClass LastLoss
//		LastLossAt NextAttemptAt Recovery SkippedPeers State Version
//	WithDialGovernor WithLogger WithObserver WithQueueConfig WithReconnectObserver
//	WithSharedDialGovernor
package controlconn
