package gocqlv2

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/core"
)

// Start checks that the v2 ClusterConfig still holds what New installed: each field replaced
// after New gives one warning naming it, kept in Status.ConfigChanged; an untouched config, or
// the user's mux around New's listener, gives none. Checked to fail with the check removed
// (New without the driver option's Check).
func TestStartWarnsOfV2ConfigChangedAfterNew(t *testing.T) {
	cases := []struct {
		name     string
		governed bool
		change   func(*gocql.ClusterConfig)
		field    string // "" for no warning
	}{
		{name: "untouched", change: func(*gocql.ClusterConfig) {}},
		{name: "untouched governed", governed: true, change: func(*gocql.ClusterConfig) {}},
		{name: "user's mux around ours", change: func(c *gocql.ClusterConfig) {
			hl := &c.Metadata.HostListener
			hl.HostStateChangeListener = gocql.HostListenersMux{HostStateChangeListeners: []gocql.HostStatusChangeListener{&userListener{}, hl.HostStateChangeListener}}
		}},
		{name: "host state listener", change: func(c *gocql.ClusterConfig) {
			c.Metadata.HostListener.HostStateChangeListener = &userListener{}
		}, field: "Metadata.HostListener.HostStateChangeListener"},
		{name: "topology listener", governed: true, change: func(c *gocql.ClusterConfig) {
			c.Metadata.HostListener.TopologyChangeListener = &userListener{}
		}, field: "Metadata.HostListener.TopologyChangeListener"},
		{name: "connect observer", change: func(c *gocql.ClusterConfig) {
			c.ConnectObserver = nil
		}, field: "ConnectObserver"},
		{name: "host dialer", governed: true, change: func(c *gocql.ClusterConfig) {
			c.HostDialer = nil
		}, field: "HostDialer"},
		{name: "conviction", governed: true, change: func(c *gocql.ClusterConfig) {
			c.ConvictionPolicy = &gocql.SimpleConvictionPolicy{}
		}, field: "ConvictionPolicy"},
		{name: "logger", governed: true, change: func(c *gocql.ClusterConfig) {
			c.Logger = &recordingLogger{}
		}, field: "Logger"},
		{name: "reconnect interval", governed: true, change: func(c *gocql.ClusterConfig) {
			c.ReconnectInterval = 60 * time.Second
		}, field: "ReconnectInterval is 1m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := gocql.NewCluster("127.0.0.1")
			cluster.Port = 1 // never reached: Start's context is done already
			cluster.Logger = &recordingLogger{}
			var logs bytes.Buffer // written by Start's caller; read after Close
			opts := []core.Option{core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if !tc.governed {
				opts = append(opts, core.WithDialGovernor(core.Governor{Off: true})) // governed is the default
			}
			cc, err := New(cluster, core.Cadence{}, opts...)
			require.NoError(t, err)
			tc.change(cluster)
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
			require.ErrorIs(t, got, core.ErrConfigChanged)
			assert.Contains(t, got.Error(), tc.field)
			assert.Contains(t, logs.String(), "level=WARN msg=\"controlconn: ClusterConfig changed after New: "+tc.field)
			assert.Equal(t, 1, strings.Count(logs.String(), "changed after New"), "one warning: %s", &logs)
		})
	}
}
