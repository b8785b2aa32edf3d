package cqlsim

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// cqlType is a CQL column type: a native type name, or a collection with its element types.
type cqlType struct {
	name   string     // lower-case: "text", "int", ..., "list", "set", "map"
	params []*cqlType // element types of a collection
	frozen bool
}

// nativeTypes maps the native CQL type names the simulator stores to their wire types.
var nativeTypes = map[string]datatype.DataType{
	"ascii": datatype.Ascii, "bigint": datatype.Bigint, "blob": datatype.Blob, "boolean": datatype.Boolean,
	"counter": datatype.Counter, "date": datatype.Date, "decimal": datatype.Decimal, "double": datatype.Double,
	"float": datatype.Float, "inet": datatype.Inet, "int": datatype.Int, "smallint": datatype.Smallint,
	"text": datatype.Varchar, "varchar": datatype.Varchar, "time": datatype.Time, "timestamp": datatype.Timestamp,
	"timeuuid": datatype.Timeuuid, "tinyint": datatype.Tinyint, "uuid": datatype.Uuid, "varint": datatype.Varint,
	"duration": datatype.Duration,
}

var (
	typeInt    = mustType("int")
	typeBigint = mustType("bigint")
	typeUUID   = mustType("uuid")
)

func mustType(s string) *cqlType {
	t, err := parseTypeString(s)
	if err != nil {
		panic(err)
	}
	return t
}

// parseTypeString parses a CQL type such as "frozen<map<text, text>>".
func parseTypeString(s string) (*cqlType, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	t, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if !p.at(tokEOF) {
		return nil, fmt.Errorf("unexpected %q after type", p.peek().text)
	}
	return t, nil
}

// dataType is the wire type.
func (t *cqlType) dataType() datatype.DataType {
	switch t.name {
	case "list":
		return datatype.NewList(t.params[0].dataType())
	case "set":
		return datatype.NewSet(t.params[0].dataType())
	case "map":
		return datatype.NewMap(t.params[0].dataType(), t.params[1].dataType())
	}
	return nativeTypes[t.name]
}

// String is the type as system_schema.columns spells it.
func (t *cqlType) String() string {
	var s string
	switch len(t.params) {
	case 0:
		s = t.name
	default:
		parts := make([]string, len(t.params))
		for i, p := range t.params {
			parts[i] = p.String()
		}
		s = t.name + "<" + strings.Join(parts, ", ") + ">"
	}
	if t.frozen {
		return "frozen<" + s + ">"
	}
	return s
}

// Encoders for the Go values the system tables hold. They write the native protocol v3+ cell format.

func encText(s string) []byte { return []byte(s) }

func encInt(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func encBigint(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func encBool(v bool) []byte {
	if v {
		return []byte{1}
	}
	return []byte{0}
}

func encUUID(u primitive.UUID) []byte { return append([]byte(nil), u[:]...) }

func encInet(ip net.IP) []byte {
	if v4 := ip.To4(); v4 != nil {
		return append([]byte(nil), v4...)
	}
	return append([]byte(nil), ip.To16()...)
}

func encDouble(v float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(v)) }

// encCollection encodes a list or set of already-encoded elements.
func encCollection(elems [][]byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(elems)))
	for _, e := range elems {
		out = binary.BigEndian.AppendUint32(out, uint32(len(e)))
		out = append(out, e...)
	}
	return out
}

// encTextList encodes set<text> (sorted, as Cassandra stores sets) or list<text> when sorted is false.
func encTextList(vals []string, sorted bool) []byte {
	if sorted {
		vals = append([]string(nil), vals...)
		sort.Strings(vals)
	}
	elems := make([][]byte, len(vals))
	for i, v := range vals {
		elems[i] = []byte(v)
	}
	return encCollection(elems)
}

// encTextMap encodes map<text, text> in key order.
func encTextMap(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		out = binary.BigEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(m[k])))
		out = append(out, m[k]...)
	}
	return out
}

// encodeLiteral encodes a literal written in a statement as a value of type t. A nil result is NULL.
// Drivers bind values rather than write them, so literals are served for the types statements
// write by hand (text, integers, boolean, uuid, inet, and lists and sets of them); any other is
// refused as invalid.
func encodeLiteral(t *cqlType, l *literal) ([]byte, error) {
	if l.kind == litNull {
		return nil, nil
	}
	mismatch := func() error {
		return invalidf("Invalid %s constant (%s) for type %s", l.kind, l.text, t)
	}
	switch t.name {
	case "ascii", "text", "varchar":
		if l.kind != litString {
			return nil, mismatch()
		}
		return []byte(l.text), nil
	case "int", "bigint", "counter", "smallint", "tinyint":
		if l.kind != litInt {
			return nil, mismatch()
		}
		bits := map[string]int{"int": 32, "bigint": 64, "counter": 64, "smallint": 16, "tinyint": 8}[t.name]
		v, err := strconv.ParseInt(l.text, 10, bits)
		if err != nil {
			return nil, mismatch()
		}
		out := binary.BigEndian.AppendUint64(nil, uint64(v))
		return out[8-bits/8:], nil
	case "boolean":
		if l.kind != litBool {
			return nil, mismatch()
		}
		return encBool(strings.EqualFold(l.text, "true")), nil
	case "uuid", "timeuuid":
		if l.kind != litUUID {
			return nil, mismatch()
		}
		u, err := parseUUID(l.text)
		if err != nil {
			return nil, mismatch()
		}
		return encUUID(u), nil
	case "inet":
		ip := net.ParseIP(l.text)
		if l.kind != litString || ip == nil {
			return nil, mismatch()
		}
		return encInet(ip), nil
	case "list", "set":
		if l.kind != litList && l.kind != litSet {
			return nil, mismatch()
		}
		elems := make([][]byte, 0, len(l.elems))
		for _, e := range l.elems {
			b, err := encodeLiteral(t.params[0], e)
			if err != nil {
				return nil, err
			}
			elems = append(elems, b)
		}
		if t.name == "set" {
			sort.Slice(elems, func(i, j int) bool { return bytes.Compare(elems[i], elems[j]) < 0 })
		}
		return encCollection(elems), nil
	}
	return nil, invalidf("literals of type %s are not supported by the simulator", t)
}

// parseUUID parses the 36-character textual form.
func parseUUID(s string) (primitive.UUID, error) {
	var u primitive.UUID
	h := strings.ReplaceAll(s, "-", "")
	if len(s) != 36 || len(h) != 32 {
		return u, fmt.Errorf("invalid uuid %q", s)
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return u, fmt.Errorf("invalid uuid %q: %w", s, err)
	}
	copy(u[:], b)
	return u, nil
}
