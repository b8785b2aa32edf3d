package metadata

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/rowdecode"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allTypesCols = []colSpec{
	{"text", datatype.Varchar}, {"ascii", datatype.Ascii}, {"id", datatype.Uuid},
	{"tid", datatype.Timeuuid}, {"ip4", datatype.Inet}, {"ip6", datatype.Inet},
	{"n", datatype.Int}, {"big", datatype.Bigint}, {"flag", datatype.Boolean},
	{"at", datatype.Timestamp}, {"blob", datatype.Blob}, {"tokens", textSet},
	{"names", datatype.NewList(datatype.Ascii)}, {"opts", datatype.NewMap(datatype.Varchar, datatype.Varchar)},
}

func allTypesRow() map[string]any {
	return map[string]any{
		"text": "dc1", "ascii": "rack1", "id": "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
		"tid": "d2177dd0-eaa2-11de-a572-001b779c76e3", "ip4": net.ParseIP("10.0.0.7"),
		"ip6": net.ParseIP("fd00::7"), "n": int32(9042), "big": int64(-1 << 40), "flag": true,
		"at": time.UnixMilli(1_700_000_000_123).UTC(), "blob": []byte{1, 2, 3},
		"tokens": []string{"-9223372036854775807", "0", "42"}, "names": []string{"a", "b"},
		"opts": map[string]string{"k": "v"},
	}
}

func TestDecodeRowsGivesEachTypeItsGoValue(t *testing.T) {
	for _, version := range []primitive.ProtocolVersion{primitive.ProtocolVersion2, primitive.ProtocolVersion4, primitive.ProtocolVersion5} {
		t.Run(version.String(), func(t *testing.T) {
			res := rowsResult(t, "t", allTypesCols, []map[string]any{allTypesRow(), {}}, version)
			rows, err := rowdecode.Decode[Row](res, version)
			require.NoError(t, err)
			require.Len(t, rows, 2)

			got := rows[0]
			assert.Equal(t, "dc1", got["text"])
			assert.Equal(t, "rack1", got["ascii"])
			assert.Equal(t, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", got["id"], "uuid in canonical lower-case form")
			assert.Equal(t, "d2177dd0-eaa2-11de-a572-001b779c76e3", got["tid"])
			assert.Equal(t, net.IP{10, 0, 0, 7}, got["ip4"], "IPv4 in 4-byte form")
			assert.Equal(t, net.ParseIP("fd00::7"), got["ip6"])
			assert.Equal(t, 9042, got["n"])
			assert.Equal(t, int64(-1<<40), got["big"])
			assert.Equal(t, true, got["flag"])
			assert.Equal(t, time.UnixMilli(1_700_000_000_123).UTC(), got["at"])
			assert.Equal(t, []byte{1, 2, 3}, got["blob"])
			assert.Equal(t, []string{"-9223372036854775807", "0", "42"}, got["tokens"])
			assert.Equal(t, []string{"a", "b"}, got["names"])
			assert.NotNil(t, got["opts"], "other types decode to datacodec's preferred type")

			// A row of NULLs: typed zero values, so a NULL column's type still checks.
			null := rows[1]
			assert.Len(t, null, len(allTypesCols))
			assert.Equal(t, "", null["text"])
			assert.Equal(t, "", null["id"])
			assert.Equal(t, net.IP(nil), null["ip4"])
			assert.Equal(t, 0, null["n"])
			assert.Equal(t, []string(nil), null["tokens"])
			ip, err := null.IP("ip4")
			require.NoError(t, err)
			assert.Nil(t, ip)
		})
	}
}

// TestDecodeRowsFromTheWire sends a RowsResult through the library's frame codec, as the
// control connection receives it, and checks decoded IPv6 values do not alias the frame.
func TestDecodeRowsFromTheWire(t *testing.T) {
	res := rowsResult(t, "t", allTypesCols, []map[string]any{allTypesRow()}, v4)
	codec := frame.NewCodec()
	var buf bytes.Buffer
	require.NoError(t, codec.EncodeFrame(frame.NewFrame(v4, 7, res), &buf))
	f, err := codec.DecodeFrame(&buf)
	require.NoError(t, err)
	wire, ok := f.Body.Message.(*message.RowsResult)
	require.True(t, ok, "got %T", f.Body.Message)

	rows, err := rowdecode.Decode[Row](wire, v4)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, net.ParseIP("fd00::7"), rows[0]["ip6"])
	assert.Equal(t, []string{"-9223372036854775807", "0", "42"}, rows[0]["tokens"])

	for _, col := range wire.Data[0] {
		for i := range col {
			col[i] = 0xff // the frame buffer is reused for the next frame
		}
	}
	assert.Equal(t, net.ParseIP("fd00::7"), rows[0]["ip6"])
	assert.Equal(t, []byte{1, 2, 3}, rows[0]["blob"])
}

func TestDecodeRowsErrorsNameRowAndColumn(t *testing.T) {
	_, err := rowdecode.Decode[Row](nil, v4)
	assert.ErrorContains(t, err, "nil rows result")

	_, err = rowdecode.Decode[Row](&message.RowsResult{Metadata: &message.RowsMetadata{ColumnCount: 2}}, v4)
	assert.ErrorContains(t, err, "no column metadata")

	res := rowsResult(t, "peers", peersCols, []map[string]any{peerRow(1, "1"), peerRow(2, "2")}, v4)
	res.Data[1] = res.Data[1][:3]
	_, err = rowdecode.Decode[Row](res, v4)
	assert.ErrorContains(t, err, "row 1 has 3 values for 9 columns")

	res = rowsResult(t, "peers", peersCols, []map[string]any{peerRow(1, "1"), peerRow(2, "2")}, v4)
	res.Data[1][6] = []byte{10, 0, 0} // rpc_address: 3 bytes is no inet
	_, err = rowdecode.Decode[Row](res, v4)
	assert.ErrorContains(t, err, `row 1, column "rpc_address"`)

	res = rowsResult(t, "peers", peersCols, nil, v4)
	rows, err := rowdecode.Decode[Row](res, v4)
	require.NoError(t, err, "an empty result still has its columns")
	assert.Empty(t, rows)
}

func TestRowAccessorsReportMissingAndMistypedColumns(t *testing.T) {
	row := Row{"rpc_address": "10.0.0.1", "tokens": []string{"1"}}

	_, err := row.Text("data_center")
	require.ErrorIs(t, err, ErrMissingColumn)
	assert.EqualError(t, err, `metadata: column "data_center": missing column`)

	_, err = row.IP("rpc_address")
	require.ErrorIs(t, err, ErrColumnType)
	var ce *columnError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, columnError{Column: "rpc_address", Want: "net.IP", Got: "string", Err: ErrColumnType}, *ce)

	tokens, err := row.Strings("tokens")
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, tokens)
	assert.True(t, row.Has("tokens"))
	assert.False(t, row.Has("rack"))
}
