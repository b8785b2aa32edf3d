package metrics

import (
	"context"
	"testing"

	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
)

// refusingDialer refuses every dial, as a node that is down does.
type refusingDialer struct{}

func (refusingDialer) DialHost(context.Context, *gocql.HostInfo) (*gocql.DialedHost, error) {
	return nil, context.DeadlineExceeded
}

// The governor's decisions reach the Collectors wired with ControlConnOptions: each dial of
// gocql's through the governed HostDialer counts once by verdict; the governor's counts and
// the metric agree.
func TestGovernorDecisionsAreCounted(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	cfg := gocql.NewCluster("127.0.0.1")
	cfg.HostDialer = refusingDialer{}
	cc, err := controlconn.New(cfg, controlconn.Cadence{}, append(c.ControlConnOptions(), controlconn.WithDialGovernor(controlconn.Governor{}))...)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()

	h, err := gocqlv1.HostInfo(controlconn.Endpoint{Addr: "127.0.0.9:9042"})
	require.NoError(t, err)
	ctx := context.Background()            // not a session's context: governed from the first dial
	_, _ = cfg.HostDialer.DialHost(ctx, h) // passes, fails for real: the host is known down
	_, err = cfg.HostDialer.DialHost(ctx, h)
	require.ErrorIs(t, err, controlconn.ErrGoverned)

	st := cc.GovernorStats()
	assert.EqualValues(t, 1, st.Passed)
	assert.EqualValues(t, 1, st.RefusedBackoff)
	assert.InDelta(t, 1, testutil.ToFloat64(c.governorDials.WithLabelValues("pass")), 0)
	assert.InDelta(t, 1, testutil.ToFloat64(c.governorDials.WithLabelValues("host_backoff")), 0)
	assert.InDelta(t, 0, testutil.ToFloat64(c.governorDials.WithLabelValues("budget")), 0)
	assert.InDelta(t, 0, testutil.ToFloat64(c.governorInterval), 0, "our connection not lost: no budget")
}
