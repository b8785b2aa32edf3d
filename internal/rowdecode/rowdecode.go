package rowdecode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// Decode decodes every row of a ROWS result with the column types its metadata declares.
// It fails on a result without column metadata (NO_METADATA: names are needed), on a row whose
// width differs from the metadata, and on any value the declared type cannot decode; the
// error names the row index and column.
// R is the caller's row type (metadata.Row), so that the rows need no copy.
func Decode[R ~map[string]any](rows *message.RowsResult, version primitive.ProtocolVersion) ([]R, error) {
	d, err := NewDecoder(rows, version)
	if err != nil {
		return nil, err
	}
	out := make([]R, len(rows.Data))
	for i := range rows.Data {
		row, err := d.Row(i)
		if err != nil {
			return nil, err
		}
		out[i] = row
	}
	return out, nil
}

// Decoder decodes the rows of one result one at a time, so that a caller can leave out a
// row that does not decode and keep the others.
type Decoder struct {
	rows     *message.RowsResult
	version  primitive.ProtocolVersion
	decoders []columnDecoder
}

// NewDecoder resolves the decoder of each column of rows once; the errors are Decode's.
func NewDecoder(rows *message.RowsResult, version primitive.ProtocolVersion) (*Decoder, error) {
	if rows == nil {
		return nil, errors.New("metadata: nil rows result")
	}
	if rows.Metadata == nil || (rows.Metadata.Columns == nil && rows.Metadata.ColumnCount > 0) {
		return nil, errors.New("metadata: rows result has no column metadata")
	}
	cols := rows.Metadata.Columns
	d := &Decoder{rows: rows, version: version, decoders: make([]columnDecoder, len(cols))}
	for i, c := range cols {
		dec, err := decoderFor(c.Type)
		if err != nil {
			return nil, fmt.Errorf("metadata: column %q: %w", c.Name, err)
		}
		d.decoders[i] = dec
	}
	return d, nil
}

// Len is the number of rows.
func (d *Decoder) Len() int { return len(d.rows.Data) }

// Row decodes row i; the error names the row index and column.
func (d *Decoder) Row(i int) (map[string]any, error) {
	cols, data := d.rows.Metadata.Columns, d.rows.Data[i]
	if len(data) != len(cols) {
		return nil, fmt.Errorf("metadata: row %d has %d values for %d columns", i, len(data), len(cols))
	}
	row := make(map[string]any, len(cols))
	for j, c := range cols {
		v, err := d.decoders[j](data[j], d.version)
		if err != nil {
			return nil, fmt.Errorf("metadata: row %d, column %q (%v): %w", i, c.Name, c.Type, err)
		}
		row[c.Name] = v
	}
	return row, nil
}

// columnDecoder decodes one value of a column whose type was resolved once per result.
type columnDecoder func(b []byte, v primitive.ProtocolVersion) (any, error)

func decoderFor(dt datatype.DataType) (columnDecoder, error) {
	if dt == nil {
		return nil, errors.New("no data type")
	}
	codec, err := datacodec.NewCodec(dt)
	if err != nil {
		return nil, err
	}
	switch dt.Code() {
	case primitive.DataTypeCodeVarchar, primitive.DataTypeCodeAscii:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var s string
			_, err := codec.Decode(b, &s, v)
			return s, err
		}, nil
	case primitive.DataTypeCodeUuid, primitive.DataTypeCodeTimeuuid:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var u primitive.UUID
			null, err := codec.Decode(b, &u, v)
			if err != nil || null {
				return "", err
			}
			return u.String(), nil
		}, nil
	case primitive.DataTypeCodeInet:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var ip net.IP
			_, err := codec.Decode(b, &ip, v)
			if len(ip) == net.IPv6len {
				ip = slices.Clone(ip) // the codec aliases the frame buffer for IPv6
			}
			return ip, err
		}, nil
	case primitive.DataTypeCodeInt:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var n int32
			_, err := codec.Decode(b, &n, v)
			return int(n), err
		}, nil
	case primitive.DataTypeCodeBigint, primitive.DataTypeCodeCounter:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var n int64
			_, err := codec.Decode(b, &n, v)
			return n, err
		}, nil
	case primitive.DataTypeCodeBoolean:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var x bool
			_, err := codec.Decode(b, &x, v)
			return x, err
		}, nil
	case primitive.DataTypeCodeTimestamp:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var t time.Time
			_, err := codec.Decode(b, &t, v)
			return t, err
		}, nil
	case primitive.DataTypeCodeBlob:
		return func(b []byte, v primitive.ProtocolVersion) (any, error) {
			var x []byte
			_, err := codec.Decode(b, &x, v)
			return slices.Clone(x), err
		}, nil
	case primitive.DataTypeCodeSet, primitive.DataTypeCodeList:
		if isText(elementType(dt)) {
			// tokens is the bulk of a refresh (a 1,000-node, 256-vnode cluster has 256,000):
			// the reflective collection codec costs four allocations per element, this one
			// allocation per value. TestTextCollectionMatchesDatacodec keeps them equal.
			return func(b []byte, v primitive.ProtocolVersion) (any, error) {
				return decodeTextCollection(b, v)
			}, nil
		}
	}
	return func(b []byte, v primitive.ProtocolVersion) (any, error) {
		var x any
		_, err := codec.Decode(b, &x, v)
		return x, err
	}, nil
}

func elementType(dt datatype.DataType) datatype.DataType {
	switch t := dt.(type) {
	case *datatype.Set:
		return t.ElementType
	case *datatype.List:
		return t.ElementType
	}
	return nil
}

func isText(dt datatype.DataType) bool {
	return dt != nil && (dt.Code() == primitive.DataTypeCodeVarchar || dt.Code() == primitive.DataTypeCodeAscii)
}

// decodeTextCollection decodes a set<text> or list<text> value the way datacodec does into a
// *[]string (NULL or no bytes is nil; a NULL element is ""), but into strings that share one
// copy of the value's bytes.
func decodeTextCollection(b []byte, v primitive.ProtocolVersion) ([]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	all := string(b) // one copy; elements are substrings of it
	wide := v.Uses4BytesCollectionLength()
	pos := 0
	readLen := func() (int, error) {
		if wide {
			if len(all)-pos < 4 {
				return 0, errors.New("collection truncated")
			}
			n := int(int32(binary.BigEndian.Uint32(b[pos:])))
			pos += 4
			return n, nil
		}
		if len(all)-pos < 2 {
			return 0, errors.New("collection truncated")
		}
		n := int(binary.BigEndian.Uint16(b[pos:]))
		pos += 2
		return n, nil
	}
	n, err := readLen()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > len(all) {
		return nil, fmt.Errorf("collection size %d impossible in %d bytes", n, len(all))
	}
	out := make([]string, n)
	for i := range out {
		l, err := readLen()
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		if l < 0 {
			continue // NULL element
		}
		if l > len(all)-pos {
			return nil, fmt.Errorf("element %d: %d bytes, %d left", i, l, len(all)-pos)
		}
		out[i] = all[pos : pos+l]
		pos += l
	}
	if pos != len(all) {
		return nil, fmt.Errorf("collection has %d bytes left over", len(all)-pos)
	}
	return out, nil
}
