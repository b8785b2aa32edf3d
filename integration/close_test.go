package integration

// Figures of the last run (go test -race ./integration/, 2 shared cores, 2026-11-30):
//
//	Close during a wait: 0.1 ms; during dials of 2 blackholed hosts (2 connects in
//	SYN_SENT, none left after): 0.2 ms; during an unanswered handshake: 0.3 ms, the node
//	recorded the socket closed by the client 0.3 ms after it healed; no goroutine or socket
//	left in any case

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Close while the control connection waits for its next attempt, while it dials a
// blackholed host, and while a node that accepted the connection never answers the handshake.
//
// Contract: Close returns within 100 ms and leaves no goroutine and no socket behind; the
// node sees the socket closed.

const closeWithin = 100 * time.Millisecond

// resources is what must be back to its baseline after Close: the process's goroutines and
// its socket file descriptors.
type resources struct {
	goroutines goleak.Option
	sockets    map[string]bool
}

func baseline(t *testing.T) resources {
	t.Helper()
	return resources{goroutines: goleak.IgnoreCurrent(), sockets: socketFDs(t)}
}

// verifyReleased fails if a goroutine or socket was added since the baseline.
func (r resources) verifyReleased(t *testing.T) {
	t.Helper()
	goleak.VerifyNone(t, r.goroutines)
	if runtime.GOOS != "linux" {
		return
	}
	deadline := time.Now().Add(time.Second)
	for {
		var extra []string
		for s := range socketFDs(t) {
			if !r.sockets[s] {
				extra = append(extra, s)
			}
		}
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("sockets left open: %v", extra)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// socketFDs lists the process's socket file descriptors by inode (Linux; empty elsewhere).
func socketFDs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if runtime.GOOS != "linux" {
		return out
	}
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, e := range entries {
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(link, "socket:") {
			out[link] = true
		}
	}
	return out
}

// synSent counts the kernel's IPv4 sockets in SYN_SENT towards addr ("ip:port"): connects in
// progress, which a cancelled dial must not leave behind (Linux; 0 elsewhere).
func synSent(t *testing.T, addr string) int {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	ip := net.ParseIP(host).To4()
	want := strings.ToUpper(hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, binary.BigEndian.Uint32(ip))) +
		":" + strings.ToUpper(strconv.FormatInt(int64(p), 16)))
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 3 && fields[2] == want && fields[3] == "02" { // 02: SYN_SENT
			n++
		}
	}
	return n
}

// closeTimed closes cc and returns how long Close took.
func closeTimed(t *testing.T, cc *controlconn.ControlConnection) time.Duration {
	t.Helper()
	begin := time.Now()
	require.NoError(t, cc.Close())
	return time.Since(begin)
}

// startInBackground starts cc without waiting for a connection.
func startInBackground(t *testing.T, cc *controlconn.ControlConnection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.Error(t, cc.Start(ctx), "not connected yet")
}

func TestCloseDuringWait(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 2})
	sim.StopAll()
	res := baseline(t)
	rec := new(clientprobe.Recorder)
	cc, err := newBlind(blindConfig(sim, controlconn.Cadence{}),
		controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	startInBackground(t, cc)
	realtime.Eventually(t, 2*time.Second, func() bool { return cc.Status().State == reconnect.StateScheduled },
		"the first attempt fails and the next is scheduled")
	time.Sleep(50 * time.Millisecond) // well inside the 1 s wait
	st := cc.Status()
	took := closeTimed(t, cc)
	t.Logf("FIGURE Close during a wait (next attempt in %s): returned in %s", realtime.Millis(time.Until(st.NextAttemptAt)), realtime.Millis(took))
	assert.LessOrEqual(t, took, closeWithin)
	res.verifyReleased(t)
}

func TestCloseDuringDialOfBlackholedHost(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 2})
	sim.BlackholeAll(true)
	res := baseline(t)
	rec := new(clientprobe.Recorder)
	cc, err := newBlind(blindConfig(sim, controlconn.Cadence{ConnectTimeout: 5 * time.Second}),
		controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	startInBackground(t, cc)
	// Both hosts are being dialled (the second after one stagger), neither connect completes.
	realtime.Eventually(t, 2*time.Second, func() bool { return len(rec.DialsIn(time.Time{}, time.Now())) >= 2 }, "both hosts dialled")
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, reconnect.StateAttempting, cc.Status().State)
	var hanging int
	for _, n := range sim.Nodes() {
		hanging += synSent(t, n.Addr())
	}
	took := closeTimed(t, cc)
	var left int
	for _, n := range sim.Nodes() {
		left += synSent(t, n.Addr())
	}
	t.Logf("FIGURE Close during dials of blackholed hosts (%d connects in SYN_SENT): returned in %s; %d connects left", hanging, realtime.Millis(took), left)
	assert.LessOrEqual(t, took, closeWithin)
	assert.Zero(t, left, "no connect left in progress")
	res.verifyReleased(t)
}

// handshakeTrap is a Dialer whose first connection is accepted by the node, which is then
// blackholed: the TCP connection is up, and nothing the client sends is ever answered.
type handshakeTrap struct {
	sim  *cqlsim.Cluster
	node *cqlsim.Node
	d    net.Dialer

	once   sync.Once
	mu     sync.Mutex
	client string // local address of the trapped connection; guarded by mu
}

func (h *handshakeTrap) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := h.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	h.once.Do(func() {
		local := nc.LocalAddr().String()
		// Wait until the node has accepted it: blackholing first would leave it in the
		// kernel's accept queue, never accepted.
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := h.sim.Await(actx, func(e cqlsim.Event) bool {
			return e.Kind == cqlsim.EventAccepted && e.Client == local
		}); err != nil {
			return
		}
		h.node.Blackhole(true)
		h.mu.Lock()
		h.client = local
		h.mu.Unlock()
	})
	return nc, nil
}

func (h *handshakeTrap) trapped() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.client
}

func TestCloseDuringHandshakeWithSilentNode(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 1})
	node := sim.Nodes()[0]
	res := baseline(t)
	trap := &handshakeTrap{sim: sim, node: node}
	rec := new(clientprobe.Recorder)
	cfg := blindConfig(sim, controlconn.Cadence{ConnectTimeout: 5 * time.Second})
	cfg.Dialer = trap
	cc, err := newBlind(cfg, controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	begin := time.Now()
	startInBackground(t, cc)
	realtime.Eventually(t, 3*time.Second, func() bool { return trap.trapped() != "" }, "the connection is trapped")
	client := trap.trapped()
	time.Sleep(100 * time.Millisecond) // the handshake's first request is out and unanswered
	require.Equal(t, reconnect.StateAttempting, cc.Status().State)
	took := closeTimed(t, cc)

	// A blackholed node reads nothing, so it learns of the client's FIN once it heals, as a
	// real host behind a dropping firewall would.
	healed := time.Now()
	node.Blackhole(false)
	closed := awaitEvent(t, sim, begin, 2*time.Second, func(e cqlsim.Event) bool {
		return e.Kind == cqlsim.EventClosed && e.Client == client
	})
	t.Logf("FIGURE Close during a handshake the node never answers: returned in %s; the node recorded %s closed (%s) %s after it healed",
		realtime.Millis(took), client, closed.Detail, realtime.Millis(closed.At.Sub(healed)))
	assert.LessOrEqual(t, took, closeWithin)
	assert.Equal(t, cqlsim.CloseClient, closed.Detail, "the client closed it")
	res.verifyReleased(t)
}
