// Package metadata turns the system.local and system.peers tables into immutable snapshots of
// the cluster (hosts, token ring, schema versions, believed host states), and publishes the
// difference between consecutive snapshots as changes to subscribers.
// Because a reconnect refreshes the tables and diffs against the last snapshot, subscribers
// see what happened while the control connection was down, and a slow subscriber is told to
// resync instead of blocking the publisher or silently missing changes.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ, and
// TestPublicSurfaceIsSmall when this package and controlconn together print more than 45
// lines of go doc -short. Users read Snapshot, Host, Ring, Change and Subscription (from
// controlconn's Snapshot and Subscribe), Row (the rows of controlconn's Query), SkippedPeer
// (Status.SkippedPeers) and match the errors; NewSnapshot, SnapshotConfig, NewHost and HostSpec build
// a snapshot for a test of code that reads one. Store, Tables and ReadTables serve the control
// connection and stay here because they build snapshots from their unexported parts (the token
// ring parsed once per refresh). Row decoding lives in internal/rowdecode.
//
//	Change: Host Kind Old
//	ChangeKind ErrClosed ErrColumnType ErrDuplicateHost ErrDuplicateToken ErrInvalidPeer
//	ErrMissingColumn ErrUnknownHost
//	Host: Addr BroadcastAddress ConnectAddress DataCenter HostID IsZero Local NumTokens Port
//		PreferredIP RPCAddress Rack ReleaseVersion SchemaVersion Spec String Tokens
//	HostAdded HostDown HostMoved HostRemoved
//	HostSpec: BroadcastAddress ConnectAddress DataCenter HostID Local Port PreferredIP RPCAddress
//		Rack ReleaseVersion SchemaVersion Tokens
//	HostUp HostUpdated NewHost NewSnapshot NewStore ReadTables Resync
//	Ring: At Len Owner
//	Row: Has IP Int Strings Text UUID
//	SchemaChanged
//	SkippedPeer: Err Peer Row
//	Snapshot: All ClusterName Host HostByAddr Hosts Len Local Partitioner Ring SchemaAgreement
//		SchemaVersions State States TakenAt WithState
//	SnapshotConfig: ClusterName Hosts Partitioner States TakenAt
//	State: String
//	StateDown StateUnknown StateUp
//	Store: ApplyStatus Close Current Refresh SetState Subscribe
//	Subscription: C Close Dropped Lagged Resync
//	Tables: At Local Peers PeersV2 Port Version
package metadata
