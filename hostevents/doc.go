// Package hostevents turns a driver's host callbacks into coalesced batches of host events.
// A driver's listener (for gocql v1, the HostSelectionPolicy wrapper controlconn.New installs;
// for gocql v2, the host listener gocqlv2.New installs) enqueues without blocking (PushHost),
// and the Queue keeps the latest state per host and releases a burst, such as a whole-cluster
// restart, as one Batch. It knows no driver's types.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ.
//
//	Batch DefaultMaxHosts DefaultMaxWait DefaultWindow ErrInvalidQueueConfig
//	Event: Addr At DC HostID Key Kind Port Source
//	Host: ConnectAddress DataCenter HostID Port
//	Kind: String
//	KindAdded KindDown KindRemoved KindUp NewQueue
//	NopQueueObserver: Coalesced Dropped Received
//	Queue: AddSession Batches Close Push PushHost Record Sessions Stats
//	QueueConfig: MaxHosts MaxWait Observer Validate Window WithDefaults
//	QueueObserver: Coalesced Dropped Received
//	Source SourceControl SourceGocql
//	Stats: Batches Coalesced Delivered Dropped Pending Received Recorded
package hostevents
