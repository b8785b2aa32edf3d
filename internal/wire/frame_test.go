package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Everything a server sends the control connection passes the checks unchanged.
func TestWellFormedResponsesDecode(t *testing.T) {
	udt, err := datatype.NewUserDefined("ks", "address", []string{"street", "zip"}, []datatype.DataType{datatype.Varchar, datatype.Int})
	require.NoError(t, err)
	nested := &message.RowsResult{
		Metadata: &message.RowsMetadata{ColumnCount: 3, Columns: []*message.ColumnMetadata{
			{Keyspace: "ks", Table: "t", Name: "m", Type: datatype.NewMap(datatype.Varchar, datatype.NewList(datatype.NewTuple(datatype.Int, datatype.Uuid)))},
			{Keyspace: "ks", Table: "t", Name: "u", Type: udt},
			{Keyspace: "ks", Table: "t2", Name: "c", Type: datatype.NewCustom("org.example.T")}, // two tables: no global spec
		}},
		Data: message.RowSet{{nil, []byte{}, []byte{1}}, {[]byte{0, 0, 0, 0}, nil, nil}},
	}
	prepared := &message.PreparedResult{PreparedQueryId: []byte("id"),
		VariablesMetadata: &message.VariablesMetadata{PkIndices: []uint16{0}, Columns: []*message.ColumnMetadata{{Keyspace: "ks", Table: "t", Name: "k", Type: datatype.Varchar}}},
		ResultMetadata:    &message.RowsMetadata{ColumnCount: 1, Columns: []*message.ColumnMetadata{{Keyspace: "ks", Table: "t", Name: "v", Type: datatype.Int}}},
	}
	for _, m := range []message.Message{
		&message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.5"}, "COMPRESSION": {"lz4", "snappy"}}},
		&message.Ready{}, &message.Authenticate{Authenticator: "PasswordAuthenticator"},
		&message.AuthChallenge{Token: []byte("c")}, &message.AuthSuccess{Token: nil},
		&message.Invalid{ErrorMessage: "no such table"}, &message.VoidResult{},
		&message.SetKeyspaceResult{Keyspace: "ks"}, systemLocalRows(), nested, prepared,
		&message.RowsResult{Metadata: &message.RowsMetadata{ColumnCount: 1} /* NO_METADATA */, Data: message.RowSet{{[]byte("x")}}},
		&message.RowsResult{Metadata: &message.RowsMetadata{ColumnCount: 1, PagingState: []byte("more"),
			Columns: []*message.ColumnMetadata{{Keyspace: "ks", Table: "t", Name: "v", Type: datatype.Int}}}},
		&message.SchemaChangeResult{ChangeType: primitive.SchemaChangeTypeCreated, Target: primitive.SchemaChangeTargetAggregate, Keyspace: "ks", Object: "a", Arguments: []string{"int", "text"}},
		&message.SchemaChangeEvent{ChangeType: primitive.SchemaChangeTypeDropped, Target: primitive.SchemaChangeTargetKeyspace, Keyspace: "ks"},
	} {
		b := encode(t, 7, m)
		codec := frame.NewRawCodec()
		raw, err := ReadFrame(bytes.NewReader(b), codec, 1<<20)
		require.NoError(t, err, "%v", m)
		f, err := Decode(codec, raw)
		require.NoError(t, err, "%v", m)
		assert.Equal(t, m.GetOpCode(), f.Body.Message.GetOpCode())
	}
}

func TestReadFrameLimit(t *testing.T) {
	b := encode(t, 1, &message.AuthChallenge{Token: make([]byte, 1000)})
	_, err := ReadFrame(bytes.NewReader(b), frame.NewRawCodec(), 1003)
	assert.True(t, errors.Is(err, ErrFrameTooLarge), "%v", err)
	raw, err := ReadFrame(bytes.NewReader(b), frame.NewRawCodec(), 1004)
	require.NoError(t, err)
	assert.Len(t, raw.Body, 1004)
}
