package core

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
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
		cc, err := newGocql(cluster, Cadence{}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
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

// Start checks that the ClusterConfig still holds what New installed: each field replaced
// after New gives one warning naming it, kept in Status.ConfigChanged; an untouched config
// gives none. Checked to fail with the check removed (checkConfig returning nil).
func TestStartWarnsOfConfigChangedAfterNew(t *testing.T) {
	cases := []struct {
		name     string
		governed bool
		change   func(*gocql.ClusterConfig)
		field    string // "" for no warning
	}{
		{name: "untouched", change: func(*gocql.ClusterConfig) {}},
		{name: "untouched governed", governed: true, change: func(*gocql.ClusterConfig) {}},
		{name: "policy", change: func(c *gocql.ClusterConfig) {
			c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
		}, field: "PoolConfig.HostSelectionPolicy no longer holds"},
		{name: "policy governed", governed: true, change: func(c *gocql.ClusterConfig) {
			c.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
		}, field: "PoolConfig.HostSelectionPolicy no longer holds"},
		// Wrapping New's policy again (another queue's listener) keeps New's listener.
		{name: "policy wrapped again", change: func(c *gocql.ClusterConfig) {
			q, err := hostevents.NewQueue(hostevents.QueueConfig{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = q.Close() })
			gocqlv1.Install(c, q)
		}},
		{name: "connect observer", change: func(c *gocql.ClusterConfig) {
			c.ConnectObserver = nil
		}, field: "ConnectObserver"},
		{name: "host dialer", governed: true, change: func(c *gocql.ClusterConfig) {
			c.HostDialer = nil
		}, field: "HostDialer"},
		{name: "conviction", governed: true, change: func(c *gocql.ClusterConfig) {
			c.ConvictionPolicy = &gocql.SimpleConvictionPolicy{}
		}, field: "ConvictionPolicy"},
		{name: "reconnect interval", governed: true, change: func(c *gocql.ClusterConfig) {
			c.ReconnectInterval = 60 * time.Second
		}, field: "ReconnectInterval is 1m0s"},
		// Ungoverned, New changes neither: setting them after New is the user's business.
		{name: "dialer ungoverned", change: func(c *gocql.ClusterConfig) {
			c.HostDialer = nil
			c.ReconnectInterval = time.Second
			c.ConvictionPolicy = &gocql.SimpleConvictionPolicy{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := gocql.NewCluster("127.0.0.1")
			cluster.Port = 1      // never reached: Start's context is done already
			var logs bytes.Buffer // written by Start's caller; read after Close
			opts := []Option{WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if !tc.governed {
				opts = append(opts, WithDialGovernor(Governor{Off: true})) // governed is the default
			}
			cc, err := newGocql(cluster, Cadence{}, opts...)
			require.NoError(t, err)
			tc.change(cluster)
			assert.NoError(t, cc.Status().ConfigChanged, "before Start")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.Error(t, cc.Start(ctx))
			got := cc.Status().ConfigChanged
			require.NoError(t, cc.Close())
			if tc.field == "" {
				assert.NoError(t, got)
				assert.NotContains(t, logs.String(), "changed after New")
				return
			}
			require.ErrorIs(t, got, ErrConfigChanged)
			assert.Contains(t, got.Error(), tc.field)
			assert.Contains(t, logs.String(), "level=WARN msg=\"controlconn: ClusterConfig changed after New: "+tc.field)
			assert.Equal(t, 1, strings.Count(logs.String(), "changed after New"), "one warning: %s", &logs)
		})
	}
}
