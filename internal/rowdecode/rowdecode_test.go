package rowdecode

import (
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The decoding of every column type, the wire round trip and the errors are tested through
// metadata.Row in metadata/row_test.go, which builds the ROWS results.

// TestTextCollectionMatchesDatacodec: the set<text> fast path must decode exactly what the
// library's reflective collection codec decodes, in every protocol version's framing.
func TestTextCollectionMatchesDatacodec(t *testing.T) {
	values := [][]string{nil, {}, {"0"}, {"", "b"}, {"-9223372036854775808", "9223372036854775807", "héllo"}}
	for _, version := range []primitive.ProtocolVersion{primitive.ProtocolVersion2, primitive.ProtocolVersion3, primitive.ProtocolVersion4, primitive.ProtocolVersion5} {
		codec, err := datacodec.NewSet(datatype.NewSet(datatype.Varchar))
		require.NoError(t, err)
		for _, in := range values {
			b, err := codec.Encode(in, version)
			require.NoError(t, err)
			var want []string
			_, err = codec.Decode(b, &want, version)
			require.NoError(t, err)
			got, err := decodeTextCollection(b, version)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%v %q", version, in)

			if len(b) > 0 { // every truncation fails in both
				for cut := 1; cut < len(b); cut++ {
					_, errWant := codec.Decode(b[:cut], &want, version)
					_, errGot := decodeTextCollection(b[:cut], version)
					assert.Equal(t, errWant != nil, errGot != nil, "%v %q cut at %d: %v / %v", version, in, cut, errWant, errGot)
				}
				_, err = decodeTextCollection(append(b, 0), version)
				assert.ErrorContains(t, err, "1 bytes left over")
			}
		}
	}
	_, err := decodeTextCollection([]byte{0x7f, 0xff, 0xff, 0xff}, primitive.ProtocolVersion4)
	assert.ErrorContains(t, err, "impossible")
}
