package wire

import (
	"bytes"
	"net"
	"runtime"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// The fuzz targets' seed corpus is committed under testdata/fuzz (the hostile frames of issue
// 10: a 2 GiB header, counts and lengths larger than the body, types nested too deep);
// `go test` replays it and the seeds below, and .ci/run fuzzes each target for a few seconds.

const fuzzMaxFrame = 1 << 20

// encode is a response frame for m as a server would send it.
func encode(tb testing.TB, stream int16, m message.Message) []byte {
	tb.Helper()
	f := frame.NewFrame(primitive.ProtocolVersion4, stream, m)
	f.Header.IsResponse = true
	var buf bytes.Buffer
	if err := frame.NewCodec().EncodeFrame(f, &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func systemLocalRows() *message.RowsResult {
	cols := []*message.ColumnMetadata{
		{Keyspace: "system", Table: "local", Name: "host_id", Index: 0, Type: datatype.Uuid},
		{Keyspace: "system", Table: "local", Name: "tokens", Index: 1, Type: datatype.NewSet(datatype.Varchar)},
		{Keyspace: "system", Table: "local", Name: "rpc_address", Index: 2, Type: datatype.Inet},
	}
	return &message.RowsResult{
		Metadata: &message.RowsMetadata{ColumnCount: 3, Columns: cols},
		Data: message.RowSet{{
			{0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1},
			{0, 0, 0, 1, 0, 0, 0, 3, '1', '0', '0'},
			{127, 0, 0, 1},
		}},
	}
}

// allocBound is what decoding n bytes from a peer may cost: a fixed slack plus a constant
// factor per byte (the decoder's representation of a 4-byte null value is a few dozen bytes).
func allocBound(n int) uint64 { return 1<<20 + 64*uint64(n) }

// checkAlloc fails t if f allocated more than allocBound(n) three times in a row. TotalAlloc
// is the whole process's, the fuzzing engine's goroutines included, so one measurement over
// the bound may be theirs; an allocation bomb is over it every time.
func checkAlloc(t *testing.T, n int, f func()) {
	var got uint64
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		if got = after.TotalAlloc - before.TotalAlloc; got <= allocBound(n) {
			return
		}
	}
	t.Fatalf("decoding %d bytes allocated %d bytes (bound %d)", n, got, allocBound(n))
}

func FuzzReadFrame(f *testing.F) {
	f.Add(encode(f, 1, &message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.5"}}}))
	f.Add(encode(f, 2, &message.Ready{}))
	f.Add(encode(f, 3, systemLocalRows()))
	f.Add(encode(f, 4, &message.ServerError{ErrorMessage: "boom"}))
	f.Add(encode(f, 5, &message.AuthChallenge{Token: []byte("challenge")}))
	f.Add(encode(f, -1, &message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
		Address: &primitive.Inet{Addr: net.IPv4(127, 0, 0, 2), Port: 9042}}))
	codec := frame.NewRawCodec()
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAlloc(t, len(b), func() {
			raw, err := ReadFrame(bytes.NewReader(b), codec, fuzzMaxFrame)
			if err != nil {
				return
			}
			if int(raw.Header.BodyLength) != len(raw.Body) {
				t.Fatalf("header says %d body bytes, read %d", raw.Header.BodyLength, len(raw.Body))
			}
			_, _ = Decode(codec, raw)
		})
	})
}

// FuzzDecodeEvent decodes b as the body of a server-pushed EVENT frame (stream -1).
func FuzzDecodeEvent(f *testing.F) {
	for _, ev := range []message.Message{
		&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeDown, Address: &primitive.Inet{Addr: net.IPv4(10, 0, 0, 1), Port: 9042}},
		&message.TopologyChangeEvent{ChangeType: primitive.TopologyChangeTypeNewNode, Address: &primitive.Inet{Addr: net.ParseIP("fe80::1"), Port: 9042}},
		&message.SchemaChangeEvent{ChangeType: primitive.SchemaChangeTypeCreated, Target: primitive.SchemaChangeTargetTable, Keyspace: "ks", Object: "t"},
		&message.SchemaChangeEvent{ChangeType: primitive.SchemaChangeTypeCreated, Target: primitive.SchemaChangeTargetFunction, Keyspace: "ks", Object: "f", Arguments: []string{"int"}},
	} {
		f.Add(encode(f, -1, ev)[9:])
	}
	codec := frame.NewRawCodec()
	f.Fuzz(func(t *testing.T, body []byte) {
		h := &frame.Header{IsResponse: true, Version: primitive.ProtocolVersion4, StreamId: -1,
			OpCode: primitive.OpCodeEvent, BodyLength: int32(len(body))}
		checkAlloc(t, len(body), func() {
			fr, err := Decode(codec, &frame.RawFrame{Header: h, Body: body})
			if err != nil {
				return
			}
			if _, ok := fr.Body.Message.(message.Event); !ok {
				t.Fatalf("an EVENT frame decoded to %T", fr.Body.Message)
			}
		})
	})
}
