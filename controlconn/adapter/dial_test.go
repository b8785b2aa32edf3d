package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAddrPort(t *testing.T) {
	for _, c := range []struct {
		ip   net.IP
		port int
		want string // "" when not ok
	}{
		{net.ParseIP("127.0.0.1"), 9042, "127.0.0.1:9042"},
		{net.ParseIP("127.0.0.1").To4(), 9042, "127.0.0.1:9042"},
		{net.ParseIP("::ffff:10.0.0.2"), 19042, "10.0.0.2:19042"},
		{net.ParseIP("fe80::1"), 9042, "[fe80::1]:9042"},
		{nil, 9042, ""},
		{net.IPv4zero, 9042, ""},
		{net.IPv6unspecified, 9042, ""},
		{net.ParseIP("127.0.0.1"), 0, ""},
		{net.ParseIP("127.0.0.1"), 65536, ""},
		{net.IP{1, 2, 3}, 9042, ""},
	} {
		ap, ok := AddrPort(c.ip, c.port)
		if ok != (c.want != "") || (ok && ap.String() != c.want) {
			t.Errorf("AddrPort(%v, %d) = %v, %v; want %q", c.ip, c.port, ap, ok, c.want)
		}
	}
}

func TestAddrPortDoesNotAllocate(t *testing.T) {
	ip := net.ParseIP("127.0.0.1")
	var sink netip.AddrPort
	if n := testing.AllocsPerRun(100, func() { sink, _ = AddrPort(ip, 9042) }); n != 0 {
		t.Fatalf("AddrPort allocates %v times per call", n)
	}
	_ = sink
}

func TestReconnectInterval(t *testing.T) {
	const def = 60 * time.Second
	for _, c := range []struct{ in, want time.Duration }{
		{def, GovernedReconnectInterval},
		{def + 1, def + 1},
		{time.Second, time.Second},
		{0, 0},
	} {
		if got := ReconnectInterval(c.in, def); got != c.want {
			t.Errorf("ReconnectInterval(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestNetDialer(t *testing.T) {
	d := NetDialer(3*time.Second, 0)
	if d.Timeout != 3*time.Second || d.KeepAlive != 0 {
		t.Fatalf("NetDialer(3s, 0) = timeout %v keepalive %v", d.Timeout, d.KeepAlive)
	}
	if d := NetDialer(time.Second, 15*time.Second); d.KeepAlive != 15*time.Second {
		t.Fatalf("keepalive %v, want 15s", d.KeepAlive)
	}
	if d := NetDialer(time.Second, -1); d.KeepAlive != 0 {
		t.Fatalf("negative keepalive kept: %v", d.KeepAlive)
	}
}

// SetupBusy: the server behind (timeouts, Overloaded, the auth quorum not there) slows a
// host's setups down; a refusal or bad credentials do not.
func TestSetupBusy(t *testing.T) {
	for _, err := range []error{
		context.DeadlineExceeded,
		fmt.Errorf("auth: %w", context.DeadlineExceeded),
		errors.New("gocql: no response to connection startup within timeout"),
		errors.New("Server is in overloaded state. Cassandra can't process the query: Query timed out before it could start"),
		errors.New("Unable to perform authentication: Cannot achieve consistency level QUORUM"),
		&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded},
	} {
		assert.True(t, SetupBusy(err), "%v", err)
	}
	for _, err := range []error{
		nil,
		&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED},
		errors.New("Provided username cassandra and/or password are incorrect"),
	} {
		assert.False(t, SetupBusy(err), "%v", err)
	}
}
