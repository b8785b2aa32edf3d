package core

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
)

// Issue 10, item 1, through the ControlConnection: against a server whose every answer is a
// 2 GiB frame header, Start returns by its deadline with a protocol error, and Close is prompt
// (goleak in TestMain checks that nothing is left).
func TestStartKeepsItsDeadlineAgainstHugeFrames(t *testing.T) {
	s := simtest.NewHostileServer(t, nil)
	s.Handshake = func(nc net.Conn, req *frame.Frame) {
		_, _ = nc.Write(simtest.RawHeader(req.Header.StreamId, primitive.OpCodeSupported, 1<<31-1))
	}
	cc, err := newWithConfig(config{ContactPoints: []string{s.Addr()}, Cadence: Cadence{ConnectTimeout: 500 * time.Millisecond}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = cc.Start(ctx)
	took := time.Since(start)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, ClassProtocol, cc.Status().LastErrClass, "%v", cc.Status().LastErr)
	assert.Less(t, took, 600*time.Millisecond, "Start kept its 500 ms deadline")
	start = time.Now()
	require.NoError(t, cc.Close())
	assert.Less(t, time.Since(start), 100*time.Millisecond, "Close")
}
