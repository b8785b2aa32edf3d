package cqlconn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/rowdecode"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// queryPageSize is the page size of every query; pages are followed to the end.
const queryPageSize = 5000

// Query runs cql at consistency ONE and returns every row, following pages. Without values it
// is a plain QUERY; with values the statement is prepared first and the values are encoded
// with the types the server declares for its bind markers (Go types as in datacodec: string,
// int/int32/int64, bool, net.IP, []byte, time.Time, ...). Statements that return no rows
// yield nil rows.
func (c *Conn) Query(ctx context.Context, cql string, values ...any) ([]metadata.Row, error) {
	rows, err := c.queryRows(ctx, cql, values...)
	if err != nil || rows == nil {
		return nil, err
	}
	return rowdecode.Decode[metadata.Row](rows, c.version)
}

// queryRows is Query without decoding: the raw ROWS result, all pages merged, or nil for a
// result that is not ROWS.
func (c *Conn) queryRows(ctx context.Context, cql string, values ...any) (*message.RowsResult, error) {
	var (
		request func(paging []byte) message.Message
	)
	if len(values) == 0 {
		request = func(paging []byte) message.Message {
			return &message.Query{Query: cql, Options: &message.QueryOptions{
				Consistency: primitive.ConsistencyLevelOne, PageSize: queryPageSize, PagingState: paging,
			}}
		}
	} else {
		resp, err := c.Do(ctx, &message.Prepare{Query: cql})
		if err != nil {
			return nil, err
		}
		prep, ok := resp.(*message.PreparedResult)
		if !ok {
			return nil, fmt.Errorf("controlconn: PREPARE answered with %v", resp)
		}
		bound, err := encodeValues(prep, values, c.version)
		if err != nil {
			return nil, err
		}
		request = func(paging []byte) message.Message {
			return &message.Execute{QueryId: prep.PreparedQueryId, ResultMetadataId: prep.ResultMetadataId,
				Options: &message.QueryOptions{
					Consistency: primitive.ConsistencyLevelOne, PositionalValues: bound,
					PageSize: queryPageSize, PagingState: paging,
				}}
		}
	}
	var all *message.RowsResult
	var paging []byte
	for {
		resp, err := c.Do(ctx, request(paging))
		if err != nil {
			return nil, err
		}
		rows, ok := resp.(*message.RowsResult)
		if !ok {
			return nil, nil // VOID, SET_KEYSPACE, SCHEMA_CHANGE
		}
		if all == nil {
			all = rows
		} else {
			all.Data = append(all.Data, rows.Data...)
		}
		if rows.Metadata == nil || len(rows.Metadata.PagingState) == 0 {
			return all, nil
		}
		paging = rows.Metadata.PagingState
	}
}

func encodeValues(prep *message.PreparedResult, values []any, v primitive.ProtocolVersion) ([]*primitive.Value, error) {
	var cols []*message.ColumnMetadata
	if prep.VariablesMetadata != nil {
		cols = prep.VariablesMetadata.Columns
	}
	if len(cols) != len(values) {
		return nil, fmt.Errorf("controlconn: statement has %d bind markers, got %d values", len(cols), len(values))
	}
	out := make([]*primitive.Value, len(values))
	for i, val := range values {
		if val == nil {
			out[i] = primitive.NewNullValue()
			continue
		}
		codec, err := datacodec.NewCodec(cols[i].Type)
		if err != nil {
			return nil, fmt.Errorf("controlconn: bind marker %d (%s): %w", i, cols[i].Name, err)
		}
		b, err := codec.Encode(val, v)
		if err != nil {
			return nil, fmt.Errorf("controlconn: bind marker %d (%s %v): %w", i, cols[i].Name, cols[i].Type, err)
		}
		out[i] = primitive.NewValue(b)
	}
	return out, nil
}

// Peers-table support per connection, as gocql decides it: servers from release 4.0 may
// have system.peers_v2; an Invalid (0x2200) answer means they do not.
const (
	peersUnknown int32 = iota
	peersV2
	peersV1
)

const (
	localQuery   = "SELECT * FROM system.local WHERE key='local'"
	peersQuery   = "SELECT * FROM system.peers"
	peersV2Query = "SELECT * FROM system.peers_v2"
)

// ReadTables reads system.local and the peers table on c and decodes them. peers remembers
// across calls on the same connection which peers table works.
func ReadTables(ctx context.Context, c *Conn, port int, peers *atomic.Int32) (metadata.SnapshotConfig, []metadata.SkippedPeer, error) {
	at := time.Now()
	local, err := c.queryRows(ctx, localQuery)
	if err != nil {
		return metadata.SnapshotConfig{}, nil, fmt.Errorf("system.local: %w", err)
	}
	if local == nil {
		return metadata.SnapshotConfig{}, nil, errors.New("system.local: no rows result")
	}
	if peers.Load() == peersUnknown {
		peers.Store(peersV1)
		if rows, err := rowdecode.Decode[metadata.Row](local, c.version); err == nil && len(rows) > 0 {
			if rv, err := rows[0].Text("release_version"); err == nil && majorVersion(rv) >= 4 {
				peers.Store(peersV2)
			}
		}
	}
	var peerRows *message.RowsResult
	v2 := peers.Load() == peersV2
	if v2 {
		peerRows, err = c.queryRows(ctx, peersV2Query)
		if IsServerError(err, primitive.ErrorCodeInvalid) {
			peers.Store(peersV1)
			v2 = false
		}
	}
	if !v2 {
		peerRows, err = c.queryRows(ctx, peersQuery)
	}
	if err != nil {
		return metadata.SnapshotConfig{}, nil, fmt.Errorf("peers: %w", err)
	}
	if peerRows == nil {
		return metadata.SnapshotConfig{}, nil, errors.New("peers: no rows result")
	}
	return metadata.ReadTables(metadata.Tables{
		Local: local, Peers: peerRows, PeersV2: v2, Port: port, Version: c.version, At: at,
	})
}

// majorVersion parses the leading number of a release version such as "4.0.11" or "3.11.17".
func majorVersion(rv string) int {
	rv = strings.TrimSpace(rv)
	if i := strings.IndexByte(rv, '.'); i >= 0 {
		rv = rv[:i]
	}
	n, err := strconv.Atoi(rv)
	if err != nil {
		return 0
	}
	return n
}
