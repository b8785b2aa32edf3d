// Package hostevents turns gocql's host callbacks into coalesced batches of host events.
// A HostSelectionPolicy wrapper forwards every call to the user's policy and then enqueues
// without blocking, and the Queue keeps the latest state per host and releases a burst, such
// as a whole-cluster restart, as one Batch.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ.
//
//	Batch DefaultMaxHosts DefaultMaxWait DefaultWindow ErrInvalidQueueConfig
//	Event: Addr At DC HostID Key Kind Port Source
//	Feeds Install
//	Kind: String
//	KindAdded KindDown KindRemoved KindUp NewQueue
//	NopQueueObserver: Coalesced Dropped Received
//	Queue: Batches Close Push Record Sessions Stats
//	QueueConfig: MaxHosts MaxWait Observer Validate Window WithDefaults
//	QueueObserver: Coalesced Dropped Received
//	Source SourceControl SourceGocql
//	Stats: Batches Coalesced Delivered Dropped Pending Received Recorded
//	Wrap
package hostevents
