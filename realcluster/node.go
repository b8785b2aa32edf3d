package realcluster

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Node is one Cassandra JVM of a Cluster: its identity (address, token, directory) stays the
// same across restarts.
type Node struct {
	c     *Cluster
	index int
	ip    string
	seed  bool
	token string
	dir   string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current JVM has exited
	paused  bool
	started time.Time
	storage time.Time // when the storage port first accepted since the JVM's launch (zero: not yet)
	ready   time.Time
}

// Index returns the node's position (0 for the first node).
func (n *Node) Index() int { return n.index }

// IP returns the node's address (BaseIP + Index).
func (n *Node) IP() string { return n.ip }

// Addr returns host:port of the node's native transport.
func (n *Node) Addr() string { return net.JoinHostPort(n.ip, strconv.Itoa(n.c.cfg.Port)) }

// Dir returns the node's directory (conf/, data/, logs/system.log).
func (n *Node) Dir() string { return n.dir }

// JMXPort returns the node's local-only JMX port: 7000 + 100 × the last byte of its address,
// as ccm numbers them (7100 for 127.0.0.1, 7200 for 127.0.0.2, ...), so that clusters on
// other loopback addresses (BaseIP 127.0.0.11, say) do not collide.
func (n *Node) JMXPort() int { return 7000 + 100*int(net.ParseIP(n.ip).To4()[3]) }

// Running reports whether the node's JVM is running (paused counts as running).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running()
}

func (n *Node) running() bool {
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// StartedAt and ReadyAt return when the current JVM was launched and when it first answered a
// CQL handshake (zero until it has).
func (n *Node) StartedAt() time.Time { n.mu.Lock(); defer n.mu.Unlock(); return n.started }

// ReadyAt returns when the node last became ready: its first CQL handshake answered since its
// last start.
func (n *Node) ReadyAt() time.Time { n.mu.Lock(); defer n.mu.Unlock(); return n.ready }

// StorageAt returns when the node's storage (internode) port first accepted a TCP connection
// since its last start, as Start saw it polling (zero if not seen before the node was ready).
// Cassandra listens there before its native transport: how long before is what a client
// could learn of a returning node before it answers CQL.
func (n *Node) StorageAt() time.Time { n.mu.Lock(); defer n.mu.Unlock(); return n.storage }

func (n *Node) prepare(bootstrap bool) error {
	for _, sub := range []string{"conf", "data", "logs"} {
		if err := os.MkdirAll(filepath.Join(n.dir, sub), 0o755); err != nil {
			return fmt.Errorf("realcluster: %w", err)
		}
	}
	if err := n.c.writeConf(n, bootstrap); err != nil {
		return fmt.Errorf("realcluster: node%d conf: %w", n.index+1, err)
	}
	return nil
}

// Start launches the node's JVM and returns once the node answers a CQL handshake, within
// Config.StartTimeout (and ctx). A node whose JVM exits or does not answer in time is killed
// and the error carries the last lines of its log.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.running() {
		n.mu.Unlock()
		return fmt.Errorf("realcluster: node%d is already running", n.index+1)
	}
	if n.c.isClosed() {
		n.mu.Unlock()
		return errors.New("realcluster: cluster closed")
	}
	args, err := n.c.jvmArgs(n)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	out, err := os.OpenFile(filepath.Join(n.dir, "logs", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.mu.Unlock()
		return fmt.Errorf("realcluster: %w", err)
	}
	cmd := exec.Command("java", args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group (a terminal's Ctrl-C reaches the test, which decides), and killed
	// by the kernel if the process that started it dies without Close (a panic, a timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		_ = out.Close()
		return fmt.Errorf("realcluster: node%d: %w", n.index+1, err)
	}
	exited := make(chan struct{})
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.started, n.storage, n.ready = time.Now(), time.Time{}, time.Time{}
	n.mu.Unlock()
	n.c.record(n, EventStarting, n.StartedAt())
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		n.c.record(n, EventStopped, time.Now())
		close(exited)
	}()

	ctx, cancel := context.WithTimeout(ctx, n.c.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	storage := net.JoinHostPort(n.ip, strconv.Itoa(n.c.cfg.StoragePort))
	for {
		if n.StorageAt().IsZero() {
			if conn, err := net.DialTimeout("tcp", storage, 100*time.Millisecond); err == nil {
				at := time.Now()
				_ = conn.Close()
				n.mu.Lock()
				n.storage = at
				n.mu.Unlock()
			}
		}
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		herr := AnswersCQLTLS(hctx, n.Addr(), n.c.probeTLS())
		hcancel()
		if herr == nil {
			at := time.Now()
			n.mu.Lock()
			n.ready = at
			n.mu.Unlock()
			n.c.record(n, EventReady, at)
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("realcluster: node%d exited before answering CQL: %s", n.index+1, n.logTail())
		case <-ctx.Done():
			_ = n.Kill()
			return fmt.Errorf("realcluster: node%d did not answer CQL within %v (%v): %s", n.index+1, n.c.cfg.StartTimeout, ctx.Err(), n.logTail())
		case <-tick.C:
		}
	}
}

// Stop stops the node gracefully (SIGTERM: Cassandra announces its shutdown to gossip) and
// waits for the JVM to exit; after Config.StopTimeout it is killed. Stopping a stopped node
// does nothing.
func (n *Node) Stop() error {
	return n.signalAndWait(syscall.SIGTERM, EventStopping, n.c.cfg.StopTimeout)
}

// Kill kills the node (SIGKILL: nothing is announced, the others' failure detector convicts it)
// and waits for the JVM to exit.
func (n *Node) Kill() error { return n.signalAndWait(syscall.SIGKILL, EventKilled, 30*time.Second) }

func (n *Node) signalAndWait(sig syscall.Signal, kind EventKind, within time.Duration) error {
	n.mu.Lock()
	if !n.running() {
		n.mu.Unlock()
		return nil
	}
	cmd, exited, paused := n.cmd, n.exited, n.paused
	n.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("realcluster: node%d: %w", n.index+1, err)
	}
	n.c.record(n, kind, time.Now())
	if paused && sig != syscall.SIGKILL {
		n.Resume() // a stopped JVM handles SIGTERM only once it runs again
	}
	select {
	case <-exited:
		return nil
	case <-time.After(within):
	}
	if sig == syscall.SIGKILL {
		return fmt.Errorf("realcluster: node%d did not exit within %v of SIGKILL", n.index+1, within)
	}
	n.c.cfg.Logf("realcluster: node%d still running %v after %v: killing it", n.index+1, within, sig)
	return n.Kill()
}

// Pause stops the JVM (SIGSTOP): its sockets stay open and accept connections in the kernel,
// but nothing answers, as a hung or half-open node.
func (n *Node) Pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() || n.paused {
		return fmt.Errorf("realcluster: node%d is not running or already paused", n.index+1)
	}
	if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("realcluster: node%d: %w", n.index+1, err)
	}
	// The stop takes effect as each of the JVM's threads next enters the kernel: return once
	// the kernel reports the process stopped, so that nothing it does afterwards is the node's.
	deadline := time.Now().Add(5 * time.Second)
	for !allStopped(n.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("realcluster: node%d not stopped 5 s after SIGSTOP", n.index+1)
		}
		time.Sleep(time.Millisecond)
	}
	n.paused = true
	n.c.record(n, EventPaused, time.Now())
	return nil
}

// allStopped reports whether every thread of pid is stopped ('T').
func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(filepath.Base(task))
		if err != nil || procState(pid, tid) != 'T' {
			return false
		}
	}
	return true
}

// procState is the state letter of a thread's /proc/pid/task/tid/stat ('R', 'S', 'T' for stopped, ...), 0 if unknown.
func procState(pid, tid int) byte {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces and parentheses; the state follows the last ')'.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 || i+2 >= len(raw) {
		return 0
	}
	return raw[i+2]
}

// Resume continues a paused JVM (SIGCONT).
func (n *Node) Resume() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.paused || !n.running() {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGCONT)
	n.paused = false
	n.c.record(n, EventResumed, time.Now())
}

func (n *Node) resumeIfPaused() { n.Resume() }

// PID returns the process ID of the node's JVM (0 when it is not running).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return 0
	}
	return n.cmd.Process.Pid
}

// CPU returns the CPU time (user + system) the node's current JVM has used, read from
// /proc/pid/stat (0 when it is not running).
func (n *Node) CPU() time.Duration {
	pid := n.PID()
	if pid == 0 {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, cpu := parseStat(raw)
	return cpu
}

// JITCPU returns the CPU time (user + system) the node's current JVM's JIT compiler threads
// (HotSpot's "C1 CompilerThreadN" and "C2 CompilerThreadN") have used, read from
// /proc/pid/task/*/stat (0 when it is not running). A compiler thread HotSpot has ended
// since (it adds and removes them with the compile queue) is no longer counted: it is at
// least the JIT's CPU over a span, not exactly.
func (n *Node) JITCPU() time.Duration {
	pid := n.PID()
	if pid == 0 {
		return 0
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		if comm, cpu := parseStat(raw); strings.HasPrefix(comm, "C1 Compiler") || strings.HasPrefix(comm, "C2 Compiler") {
			sum += cpu
		}
	}
	return sum
}

// parseStat returns the command name and the CPU time (utime + stime) of a /proc stat line.
func parseStat(raw []byte) (comm string, cpu time.Duration) {
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0
	}
	f := strings.Fields(s[end+1:])
	// After the comm: state(0) ... utime(11) stime(12), in clock ticks (100 per second on Linux).
	if len(f) < 13 {
		return s[open+1 : end], 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return s[open+1 : end], time.Duration(u+st) * 10 * time.Millisecond
}

// RSS returns the JVM's resident memory in bytes (0 when it is not running).
func (n *Node) RSS() int64 {
	n.mu.Lock()
	if !n.running() {
		n.mu.Unlock()
		return 0
	}
	pid := n.cmd.Process.Pid
	n.mu.Unlock()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Log returns the node's system.log.
func (n *Node) Log() string {
	raw, _ := os.ReadFile(filepath.Join(n.dir, "logs", "system.log"))
	return string(raw)
}

func (n *Node) logTail() string {
	tail := lastLines(n.Log(), 5)
	if out, _ := os.ReadFile(filepath.Join(n.dir, "logs", "stdout.log")); len(out) > 0 {
		tail += " | stdout: " + lastLines(string(out), 3)
	}
	return tail
}

func lastLines(s string, k int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return strings.Join(lines, " | ")
}

func (c *Cluster) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// AnswersCQL reports whether a CQL server at addr answers the start of a handshake: a
// protocol v4 STARTUP gets READY or AUTHENTICATE. This is what "ready" means here, not a log
// line: a node whose native transport is listening but not yet serving fails it.
func AnswersCQL(ctx context.Context, addr string) error { return AnswersCQLTLS(ctx, addr, nil) }

// AnswersCQLTLS is AnswersCQL over TLS with tc (plain when tc is nil).
func AnswersCQLTLS(ctx context.Context, addr string, tc *tls.Config) error {
	var conn net.Conn
	var err error
	if tc != nil {
		conn, err = (&tls.Dialer{Config: tc}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	body := []byte{0, 1}
	for _, s := range []string{"CQL_VERSION", "3.0.0"} {
		body = binary.BigEndian.AppendUint16(body, uint16(len(s)))
		body = append(body, s...)
	}
	// v4 request header: version, flags, stream, opcode STARTUP (0x01), body length.
	frame := []byte{0x04, 0, 0, 0, 0x01}
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		return err
	}
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return err
	}
	switch hdr[4] {
	case 0x02, 0x03: // READY, AUTHENTICATE
		return nil
	case 0x00:
		msg := make([]byte, min(binary.BigEndian.Uint32(hdr[5:]), 1024))
		_, _ = io.ReadFull(conn, msg)
		return fmt.Errorf("realcluster: %s answered STARTUP with an error: %q", addr, msg)
	default:
		return fmt.Errorf("realcluster: %s answered STARTUP with opcode 0x%02x", addr, hdr[4])
	}
}
