package metadata

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tokens(ts ...string) func(*HostSpec) { return func(s *HostSpec) { s.Tokens = ts } }

// Hosts 1, 2, 3 own tokens -100, 0 and 100: host 2 owns (-100, 0], host 3 owns (0, 100], and
// host 1 owns (100, max] plus [min, -100] (wraparound).
func threeHostRing(t *testing.T) *Ring {
	t.Helper()
	s := mustSnapshot(t, nil,
		mustHost(t, 3, tokens("100")), mustHost(t, 1, tokens("-100")), mustHost(t, 2, tokens("0")))
	return s.Ring()
}

func TestRingOwnerEdges(t *testing.T) {
	r := threeHostRing(t)
	require.Equal(t, 3, r.Len())
	cases := []struct {
		token int64
		owner int
	}{
		{math.MinInt64, 1}, {-101, 1}, {-100, 1}, // up to and including the first token
		{-99, 2}, {-1, 2}, {0, 2},
		{1, 3}, {100, 3},
		{101, 1}, {math.MaxInt64, 1}, // past the last token: wraparound to the first
	}
	for _, c := range cases {
		h, ok := r.Owner(c.token)
		require.True(t, ok)
		assert.Equal(t, uuidN(c.owner), h.HostID(), "token %d", c.token)
	}
	tok, h := r.At(0)
	assert.Equal(t, int64(-100), tok)
	assert.Equal(t, uuidN(1), h.HostID())
	tok, h = r.At(2)
	assert.Equal(t, int64(100), tok)
	assert.Equal(t, uuidN(3), h.HostID())
}

func TestRingSingleTokenOwnsEverything(t *testing.T) {
	r := mustSnapshot(t, nil, mustHost(t, 1, tokens("7"))).Ring()
	for _, tok := range []int64{math.MinInt64, 6, 7, 8, math.MaxInt64} {
		h, ok := r.Owner(tok)
		require.True(t, ok)
		assert.Equal(t, uuidN(1), h.HostID())
	}
}

func TestRingEmptyAndNonMurmur3(t *testing.T) {
	_, ok := mustSnapshot(t, nil, mustHost(t, 1, tokens())).Ring().Owner(0)
	assert.False(t, ok, "a ring without tokens owns nothing")

	s, err := NewSnapshot(SnapshotConfig{
		Partitioner: "org.apache.cassandra.dht.RandomPartitioner",
		Hosts:       []Host{mustHost(t, 1, tokens("170141183460469231731687303715884105727"))},
	})
	require.NoError(t, err)
	assert.Equal(t, 0, s.Ring().Len(), "only Murmur3 rings are modelled")
	_, ok = s.Ring().Owner(0)
	assert.False(t, ok)
}

func TestRingRejectsBadAndDuplicateTokens(t *testing.T) {
	_, err := NewSnapshot(SnapshotConfig{Partitioner: "org.apache.cassandra.dht.Murmur3Partitioner",
		Hosts: []Host{mustHost(t, 1, tokens("12x"))}})
	assert.ErrorContains(t, err, `token "12x" is not a Murmur3 token`)

	_, err = NewSnapshot(SnapshotConfig{Partitioner: "org.apache.cassandra.dht.Murmur3Partitioner",
		Hosts: []Host{mustHost(t, 1, tokens("5", "6")), mustHost(t, 2, tokens("6"))}})
	assert.ErrorContains(t, err, "token 6 claimed by hosts "+uuidN(1)+" and "+uuidN(2))
}
