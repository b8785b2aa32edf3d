package core

import (
	"context"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hot path as gocql takes it: a dial with its session's context (cancellable, a session
// that has connected) to a host believed up while our connection is up. One map lookup more
// than BenchmarkGovernedDialUpHost (the session's context), and still no allocation.
func TestGovernedSessionDialUpHostAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	g, err := newDialGovernor(Governor{}, 0, nil, nil)
	require.NoError(t, err)
	d := newGovDialer(g, &countingHostDialer{dh: &gocql.DialedHost{}})
	h := testHost(t, "127.0.0.1:9042")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = d.DialHost(ctx, h) // the session's first connection
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() { _, _ = d.DialHost(ctx, h) })
	assert.Zero(t, allocs, "allocations per governed dial of a session to an up host")
	assert.EqualValues(t, 1, g.Stats().SessionFirst, "only the first was a session's first connection")
}

func BenchmarkGovernedSessionDialUpHost(b *testing.B) {
	g, err := newDialGovernor(Governor{}, 0, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	d := newGovDialer(g, &countingHostDialer{dh: &gocql.DialedHost{}})
	h := testHost(b, "127.0.0.1:9042")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := d.DialHost(ctx, h); err != nil { // the session has connected
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.DialHost(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}
