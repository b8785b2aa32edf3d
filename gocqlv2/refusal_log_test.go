package gocqlv2

// Regression this file catches (run against the code before the fix: it failed, two lines per
// refused dial, a Debug "Pool unable to establish a connection to host." and a Warning
// "Connection pool filling failed."): with a gocql v2 logger configured, a dial the governor
// refused logs once.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
)

// recordingLogger is a gocql v2 StructuredLogger that keeps every line.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLogger) add(level, msg string, fields []gocql.LogField) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", level, msg)
	for _, f := range fields {
		fmt.Fprintf(&b, " %s=%v", f.Name, f.Value.Any())
	}
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
}

func (l *recordingLogger) Error(msg string, f ...gocql.LogField)   { l.add("ERROR", msg, f) }
func (l *recordingLogger) Warning(msg string, f ...gocql.LogField) { l.add("WARN", msg, f) }
func (l *recordingLogger) Info(msg string, f ...gocql.LogField)    { l.add("INFO", msg, f) }
func (l *recordingLogger) Debug(msg string, f ...gocql.LogField)   { l.add("DEBUG", msg, f) }

func (l *recordingLogger) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// afterGate admits the first n dials, then refuses every one as controlconn's governor does.
type afterGate struct {
	n, admits atomic.Int64
}

func (g *afterGate) SetReconnectInterval(time.Duration) {}
func (g *afterGate) Admit(_ context.Context, addr netip.AddrPort) (bool, error) {
	if g.admits.Add(1) > g.n.Load() {
		return false, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr),
			Err: fmt.Errorf("%w (test)", core.ErrGoverned)}
	}
	return false, nil
}
func (g *afterGate) Done(context.Context, netip.AddrPort, bool, error) {}
func (g *afterGate) SetupDone(netip.AddrPort, time.Duration, error)    {}
func (g *afterGate) PoolEmpty(netip.AddrPort)                          {}

// A v2 session whose pool fill is refused (NumConns 2: the second connection of the host's pool
// is refused by the gate, after the dials the session's start needs): one log line per refused
// dial, naming the refusal, at Debug (gocql v2's own level for a refused connection).
func TestRefusedDialLogsOnceWithV2Logger(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 1, BaseIP: "127.0.42.61"})
	cluster := v2Cluster(sim)
	cluster.NumConns = 2
	log := &recordingLogger{}
	cluster.Logger = log
	gate := &afterGate{}
	gate.n.Store(4) // the dials gocql v2.1.2's CreateSession makes before the pool's second (with 3, CreateSession fails)
	governV2(cluster, gate, v2HostDialer(cluster, nil))
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	bounded.Close(t, "gocql v2 Session.Close", session.Close)

	// The fill that met the refusal has ended once v2 logs the pool's size after it.
	require.Eventually(t, func() bool {
		for _, l := range log.snapshot() {
			if strings.Contains(l, "after filling stopped") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "gocql v2 ends its pool fill")
	refused := gate.admits.Load() - gate.n.Load()
	require.Positive(t, refused, "a dial was refused")
	var lines []string
	for _, l := range log.snapshot() {
		if strings.Contains(l, core.ErrGoverned.Error()) {
			lines = append(lines, l)
		}
	}
	assert.Len(t, lines, int(refused), "one line per refused dial: %q", lines)
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, "DEBUG "), l)
	}

	// Any other failed fill still warns.
	other := &recordingLogger{}
	refusalLogger{other}.Warning(fillFailed, gocql.NewLogFieldError("err", errors.New("connection reset")))
	refusalLogger{other}.Warning("Node is DOWN.", gocql.NewLogFieldError("err", core.ErrGoverned))
	assert.Len(t, other.snapshot(), 2)
}
