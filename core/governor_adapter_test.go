package core

// newForDriver and the field (adapter.Driver.TakeGate) a driver adapter (gocqlv2) sets to get the
// governor. Checked to fail with the evidence sink left unset (the connected dial did not reach
// run), and with our own dials left ungoverned.

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

func TestNewForDriverHandsTheGovernorToAnAdapter(t *testing.T) {
	c := config{ContactPoints: []string{"127.0.0.1"}}
	installed := 0
	install := func(*hostevents.Queue) { installed++ }

	// Without the adapter's option, newForDriver cannot install WithDialGovernor: an
	// error, not a governor silently dropped (issue 18, defect 8).
	_, err := newForDriver(c, adapter.Driver{Install: install}, WithDialGovernor(Governor{}))
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.Zero(t, installed, "nothing installed")

	// Governed by default: without WithDialGovernor the adapter gets the default governor.
	var gates []adapter.Gate
	taker := adapter.Driver{Install: install, TakeGate: func(g adapter.Gate) { gates = append(gates, g) }}
	cd, err := newForDriver(c, taker)
	require.NoError(t, err)
	require.Len(t, gates, 1, "the default governor handed over")
	assert.NotNil(t, cd.gov)
	require.NoError(t, cd.Close())
	gates = nil

	// Turned off, the adapter gets nothing.
	cc2, err := newForDriver(c, taker, WithDialGovernor(Governor{Off: true}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc2.Close()) }()
	assert.Empty(t, gates)
	assert.Nil(t, cc2.gov)

	// An invalid Governor: an error, nothing handed over, nothing installed.
	before := installed
	_, err = newForDriver(c, taker, WithDialGovernor(Governor{Jitter: 2}))
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.Empty(t, gates)
	assert.Equal(t, before, installed)

	// Both: the adapter gets the governor once; ours dials through the same one; a driver
	// dial that connects while ours is down is evidence that reaches run.
	cc3, err := newForDriver(c, taker, WithDialGovernor(Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc3.Close()) }()
	require.Len(t, gates, 1)
	require.NotNil(t, cc3.gov)
	assert.Same(t, cc3.gov.g, gates[0].(*driverGate).g, "one budget for the process")
	assert.Same(t, cc3.gov.g, cc3.connCfg.Dialer.(*governedNetDialer).g, "ours is governed too")

	gate := gates[0]
	addr := netip.MustParseAddrPort("127.0.0.5:9042")
	cc3.gov.ConnDown()
	first, err := gate.Admit(context.Background(), addr)
	require.NoError(t, err, "the budget's first dial of the outage")
	assert.False(t, first)
	gate.Done(context.Background(), addr, false, nil)
	select {
	case got := <-cc3.dialed:
		assert.Equal(t, addr.String(), got)
	default:
		t.Fatal("a connected driver dial while ours is down did not reach run")
	}
	other := netip.MustParseAddrPort("127.0.0.6:9042")
	cc3.gov.ConnDown()
	gate.Done(context.Background(), other, false, errRefusedSim) // a failed dial: other is known down
	_, err = gate.Admit(context.Background(), other)
	assert.ErrorIs(t, err, ErrGoverned)
	assert.EqualValues(t, 1, cc3.GovernorStats().Evidence)

	// Closed, with the driver's interval as its user configured it: a down host gets one
	// real dial per that interval, a host that is not down passes.
	gate.SetReconnectInterval(time.Minute)
	require.NoError(t, cc3.Close())
	third := netip.MustParseAddrPort("127.0.0.7:9042")
	_, err = gate.Admit(context.Background(), third)
	require.NoError(t, err, "closed: a host not down passes")
	gate.Done(context.Background(), third, false, errRefusedSim)
	_, err = gate.Admit(context.Background(), third)
	assert.ErrorIs(t, err, ErrGoverned, "closed: one real dial per the user's interval")
	_, err = gate.Admit(context.Background(), addr)
	assert.NoError(t, err, "closed: a host not down passes")
}
