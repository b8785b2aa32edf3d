package metadata

import "errors"

// The errors of this package, to match with errors.Is.
var (
	// ErrClosed is returned by a closed Subscription (and Store).
	ErrClosed = errors.New("metadata: closed")
	// ErrInvalidPeer is wrapped by the errors of SkippedPeer for rows gocql v1.7.0 would
	// ignore (null rpc_address, host_id, data_center, rack or tokens) and rows that do not
	// decode. Such rows are skipped; any other error means the whole result is unusable.
	ErrInvalidPeer = errors.New("invalid peer")
	// ErrDuplicateHost is wrapped when two rows or hosts carry the same host_id.
	ErrDuplicateHost = errors.New("duplicate host_id")
	// ErrDuplicateToken is wrapped when a peer claims a token an earlier row (or the local
	// node) already owns: the ring's owner of that token would depend on row order.
	ErrDuplicateToken = errors.New("token claimed by another host")
	// ErrUnknownHost is wrapped when an ID or address matches no host of the snapshot (the
	// remedy is a refresh, as gocql debounces one for an event about an unknown address).
	ErrUnknownHost = errors.New("unknown host")
	// ErrMissingColumn is wrapped by Row's errors about a column the result does not have;
	// the error names the column.
	ErrMissingColumn = errors.New("missing column")
	// ErrColumnType is wrapped by Row's errors about a column whose decoded value has another
	// type; the error names the column, the type wanted and the type found.
	ErrColumnType = errors.New("unexpected column type")
)
