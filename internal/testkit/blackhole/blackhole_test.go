package blackhole

import (
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/nft"
)

// A blackholed address and port drop the SYN (the dial times out, not refused), a healed one
// accepts again, and Close leaves no table; a non-loopback address is refused.
func TestDropHealClose(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skipf("nft not on PATH: %v", err)
	}
	b, err := New("cqlcontrol_bhtest_")
	if err != nil {
		t.Skipf("no nftables here (not root?): %v", err)
	}
	t.Cleanup(func() { _ = b.Close() }) // a failed test's table; after the Close below, an error ignored
	ln, err := net.Listen("tcp", "127.0.0.149:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dial := func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 300*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	require.NoError(t, dial())
	require.NoError(t, b.Drop("127.0.0.149", port))
	err = dial()
	require.Error(t, err)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "dropped, not refused: %v", err)
	require.NoError(t, b.Heal("127.0.0.149", port))
	require.NoError(t, dial())
	assert.Error(t, b.Drop("10.1.2.3", port), "only loopback")
	require.NoError(t, b.Close())
	out, _ := nft.Run("", "list", "tables", "inet")
	assert.NotContains(t, string(out), b.Name())
}
