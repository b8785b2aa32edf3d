package syncount

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/nft"
)

const (
	testGID    = 4251
	dialEnv    = "SYNCOUNT_TEST_DIAL"
	testPrefix = "cqlcontrol_syntest_"
)

// TestMain makes the test binary a dialler when dialEnv names an address: it dials it that many
// times (SYNCOUNT_TEST_TIMES) and exits, so the test can run it with a group ID of its own.
func TestMain(m *testing.M) {
	if addr := os.Getenv(dialEnv); addr != "" {
		n, _ := strconv.Atoi(os.Getenv("SYNCOUNT_TEST_TIMES"))
		for range n {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				_ = c.Close()
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The counter counts the SYNs of the group's processes to its addresses and port, to a
// listening port and to a closed one alike, and leaves out the same dials from another group
// and dials to another port; Close removes the table.
func TestCountsTheGroupsSYNs(t *testing.T) {
	if err := nft.Available(); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.151:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }() // never accepts: the kernel completes a few handshakes in its backlog
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := New(testPrefix, testGID, []string{"127.0.0.151", "127.0.0.152"}, port)
	if err != nil {
		t.Skipf("no nftables here (not root?): %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })

	dial := func(addr string, times, gid int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), dialEnv+"="+addr, "SYNCOUNT_TEST_TIMES="+strconv.Itoa(times))
		if gid >= 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(gid)}}
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	dial(ln.Addr().String(), 3, testGID)                                    // accepted: 3 SYNs
	dial(net.JoinHostPort("127.0.0.152", strconv.Itoa(port)), 2, testGID)   // refused: 2 SYNs
	dial(ln.Addr().String(), 4, -1)                                         // another group: none
	dial(net.JoinHostPort("127.0.0.151", strconv.Itoa(port+1)), 2, testGID) // another port: none
	n, err := c.Read()
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)

	require.NoError(t, c.Close())
	out, _ := nft.Run("", "list", "tables", "inet")
	assert.NotContains(t, string(out), c.Name())
	_, err = c.Read()
	assert.Error(t, err, "a closed counter reads nothing")
}

func TestNewRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		port  int
	}{
		{nil, 9042},
		{[]string{"::1"}, 9042},
		{[]string{"node1"}, 9042},
		{[]string{"127.0.0.1"}, 0},
		{[]string{"127.0.0.1"}, 70000},
	} {
		_, err := New(testPrefix, testGID, tc.addrs, tc.port)
		assert.Error(t, err, "%v port %d", tc.addrs, tc.port)
	}
}
