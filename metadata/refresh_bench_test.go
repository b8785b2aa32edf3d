package metadata

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// peersTables builds system.local plus a system.peers result of n rows, each host with
// tokensPerHost random Murmur3 tokens (16 is Cassandra 4's default num_tokens, 256 3.x's).
func peersTables(tb testing.TB, n, tokensPerHost int) Tables {
	rng := rand.New(rand.NewPCG(1, 2))
	toks := func() []string {
		ts := make([]string, tokensPerHost)
		for i := range ts {
			ts[i] = strconv.FormatInt(int64(rng.Uint64()), 10)
		}
		slices.Sort(ts) // a set<text> arrives sorted
		return ts
	}
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = peerRow(i+2, toks()...)
		rows[i]["data_center"] = fmt.Sprint("dc", i%3+1)
		rows[i]["rack"] = fmt.Sprint("rack", i%5+1)
	}
	return Tables{
		Local:   rowsResult(tb, "local", localCols, []map[string]any{localRow(1, toks()...)}, v4),
		Peers:   rowsResult(tb, "peers", peersCols, rows, v4),
		Port:    9042,
		Version: v4,
		At:      time.Unix(1_700_000_000, 0),
	}
}

// BenchmarkRefresh1000Peers: decode a 1,000-row system.peers result (plus system.local) into
// hosts and build a Snapshot with its token ring.
func BenchmarkRefresh1000Peers(b *testing.B) {
	for _, tokensPerHost := range []int{16, 256} {
		b.Run(fmt.Sprint("tokens=", tokensPerHost), func(b *testing.B) {
			tables := peersTables(b, 1000, tokensPerHost)
			b.ReportAllocs()
			for b.Loop() {
				cfg, skipped, err := ReadTables(tables)
				if err != nil || len(skipped) != 0 {
					b.Fatal(err, skipped)
				}
				s, err := NewSnapshot(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if s.Len() != 1001 || s.Ring().Len() != 1001*tokensPerHost {
					b.Fatalf("%d hosts, %d tokens", s.Len(), s.Ring().Len())
				}
			}
		})
	}
}

// BenchmarkDiff1000: the cost of a reconnect's diff when nothing but one state changed.
func BenchmarkDiff1000(b *testing.B) {
	cfg, _, err := ReadTables(peersTables(b, 1000, 16))
	require.NoError(b, err)
	old, err := NewSnapshot(cfg)
	require.NoError(b, err)
	next, err := old.WithState(cfg.Hosts[500].HostID(), StateDown)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if len(diff(old, next)) != 1 {
			b.Fatal("want one change")
		}
	}
}

// BenchmarkApplyStatus1000: a pushed DOWN/UP event against a 1,001-host snapshot, published
// to one subscriber.
func BenchmarkApplyStatus1000(b *testing.B) {
	cfg, _, err := ReadTables(peersTables(b, 1000, 16))
	require.NoError(b, err)
	st := NewStore(nil)
	_, err = st.Refresh(cfg)
	require.NoError(b, err)
	sub, _, err := st.Subscribe(1)
	require.NoError(b, err)
	defer sub.Close()
	ip := net.IP(cfg.Hosts[500].ConnectAddress())
	b.ReportAllocs()
	up := false
	for b.Loop() {
		if _, err := st.ApplyStatus(ip, 9042, up); err != nil {
			b.Fatal(err)
		}
		up = !up
		_, _ = sub.Resync()
	}
}

func BenchmarkRingOwner(b *testing.B) {
	cfg, _, err := ReadTables(peersTables(b, 1000, 256))
	require.NoError(b, err)
	s, err := NewSnapshot(cfg)
	require.NoError(b, err)
	r := s.Ring()
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := r.Owner(int64(rng.Uint64())); !ok {
			b.Fatal("empty ring")
		}
	}
}
