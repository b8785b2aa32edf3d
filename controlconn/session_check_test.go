package controlconn

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/bounded"
)

// New after CreateSession is told: the session never reports host events (gocql copied the
// configuration before New wrapped its policy), and the first connection logs a warning
// saying so. In the right order there is no warning. Without the check nothing said it.
func TestNewAfterCreateSessionIsTold(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 1})
	for _, sessionFirst := range []bool{true, false} {
		cluster := gocql.NewCluster(sim.ContactPoints()...)
		cluster.Port = sim.Port()
		cluster.Logger = log.New(io.Discard, "", 0)
		var session *gocql.Session
		var err error
		if sessionFirst {
			session, err = cluster.CreateSession()
			require.NoError(t, err)
		}
		var logs bytes.Buffer // written by cc's goroutines, read after Close has joined them
		cc, err := New(cluster, Cadence{}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, err)
		if !sessionFirst {
			session, err = cluster.CreateSession()
			require.NoError(t, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, cc.Start(ctx))
		cancel()
		require.NoError(t, cc.Close())
		bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)
		if sessionFirst {
			assert.Contains(t, logs.String(), "call New before CreateSession", "session first")
		} else {
			assert.NotContains(t, logs.String(), "CreateSession", "New first")
		}
	}
}
