// Package metadata turns the system.local and system.peers tables into immutable snapshots of
// the cluster (hosts, token ring, schema versions, believed host states), and publishes the
// difference between consecutive snapshots as changes to subscribers.
// Because a reconnect refreshes the tables and diffs against the last snapshot, subscribers
// see what happened while the control connection was down, and a slow subscriber is told to
// resync instead of blocking the publisher or silently missing changes.
package metadata
