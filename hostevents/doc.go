// Package hostevents turns gocql's host callbacks into coalesced batches of host events.
// A HostSelectionPolicy wrapper forwards every call to the user's policy and then enqueues
// without blocking, and the Queue keeps the latest state per host and releases a burst, such
// as a whole-cluster restart, as one Batch.
package hostevents
