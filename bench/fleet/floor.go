package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// login performs one CQL v4 login on addr: STARTUP, AUTHENTICATE, AUTH_RESPONSE with a
// PasswordAuthenticator's PLAIN token, and returns once AUTH_SUCCESS arrives (one bcrypt check
// on the server), the connection closed after.
func login(ctx context.Context, addr, user, password string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
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
	if op, err := roundTrip(conn, 0x01, body); err != nil {
		return err
	} else if op != 0x03 {
		return fmt.Errorf("STARTUP answered with opcode 0x%02x, want AUTHENTICATE", op)
	}
	token := append(append(append([]byte{0}, user...), 0), password...)
	body = binary.BigEndian.AppendUint32(nil, uint32(len(token)))
	body = append(body, token...)
	op, err := roundTrip(conn, 0x0F, body)
	if err != nil {
		return err
	}
	if op != 0x10 {
		return fmt.Errorf("AUTH_RESPONSE answered with opcode 0x%02x, want AUTH_SUCCESS", op)
	}
	return nil
}

// roundTrip sends one v4 request frame and returns the opcode of the response (its body read
// and dropped).
func roundTrip(conn net.Conn, op byte, body []byte) (byte, error) {
	frame := []byte{0x04, 0, 0, 0, op}
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		return 0, err
	}
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return 0, err
	}
	if _, err := io.CopyN(io.Discard, conn, int64(binary.BigEndian.Uint32(hdr[5:]))); err != nil {
		return 0, err
	}
	return hdr[4], nil
}

// loginLoop runs conc clients logging in to addr back to back until ctx ends, each login given
// at most perLogin, and calls done after each login with its error and end time (concurrently),
// unless ctx ended during it. After a failed login a client waits 100 ms: no spin.
func loginLoop(ctx context.Context, conc int, addr, user, password string, perLogin time.Duration, done func(err error, end time.Time)) {
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				lctx, lcancel := context.WithTimeout(ctx, perLogin)
				err := login(lctx, addr, user, password)
				lcancel()
				if ctx.Err() != nil {
					return // cut by the end: neither a login nor a failure of the node
				}
				done(err, time.Now())
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// measureFloor is the node's login throughput: conc clients logging in back to back for
// warm then for window; the logins that succeeded in window, per second.
func measureFloor(addr, user, password string, conc int, warm, window time.Duration) (float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	var counting atomic.Bool
	var ok, failed atomic.Int64
	var lastErr atomic.Value
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		loginLoop(ctx, conc, addr, user, password, 30*time.Second, func(err error, _ time.Time) {
			switch {
			case !counting.Load():
			case err != nil:
				failed.Add(1)
				lastErr.Store(err.Error())
			default:
				ok.Add(1)
			}
		})
	}()
	time.Sleep(warm)
	counting.Store(true)
	begin := time.Now()
	time.Sleep(window)
	n := ok.Load()
	took := time.Since(begin)
	cancel()
	<-finished
	if n == 0 {
		return 0, fmt.Errorf("no login succeeded in %v (%d failed, last: %v)", window, failed.Load(), lastErr.Load())
	}
	return float64(n) / took.Seconds(), nil
}

// ReturnFloor is one sample of what a node offers a fleet right after a SIGKILL restart, with
// no fleet beside it: conc clients logging in back to back from the moment the node answers
// CQL (the zero of the rows' T columns). Its K-th login is the earliest a fleet of K needing
// one login each could be served by that node on this machine, however well its logins were
// admitted; the idle floor (Floor) is of a node warmed up for seconds first.
type ReturnFloor struct {
	Cost int `json:"bcrypt_cost"`
	// KthLoginS is the seconds from the node answering CQL to its k-th successful login, by k
	// (absent when the window ended first).
	KthLoginS map[string]float64 `json:"kth_login_s"`
	// FirstSecondsRate is the successful logins per second over the first n seconds after
	// the node answered, by n (10, 20, 30, ... up to the window).
	FirstSecondsRate map[string]float64 `json:"first_seconds_logins_per_s"`
	Logins           int                `json:"logins"`
	Failed           int                `json:"failed"`
	// ServerCPUS is the node's CPU seconds over the window (0 when not read), JITCPUS the
	// part its JIT compiler threads took, and CPUPerLoginMs the node's CPU per successful
	// login in milliseconds.
	ServerCPUS    float64 `json:"server_cpu_s,omitempty"`
	JITCPUS       float64 `json:"server_jit_cpu_s,omitempty"`
	CPUPerLoginMs float64 `json:"server_cpu_per_login_ms,omitempty"`
	WindowS       float64 `json:"window_s"`
	MeasuredUnder string  `json:"measured_under"`
}

// measureReturn logs in with conc clients back to back on addr from now until ready+window,
// and returns the successful logins' end times in seconds after ready (sorted) and the
// failures' count. ready is when the node answered CQL; the clients start at once.
func measureReturn(addr, user, password string, conc int, ready time.Time, window time.Duration) ([]float64, int) {
	ctx, cancel := context.WithDeadline(context.Background(), ready.Add(window))
	defer cancel()
	var mu sync.Mutex
	var oks []float64
	failed := 0
	loginLoop(ctx, conc, addr, user, password, window, func(err error, end time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			return
		}
		oks = append(oks, end.Sub(ready).Seconds())
	})
	slices.Sort(oks)
	return oks, failed
}

// returnFloor summarises one sample: the k-th login of each k in ks, and the rate over the
// first 10, 20, ... seconds of window.
func returnFloor(cost int, oks []float64, failed, conc int, window time.Duration, ks []int) ReturnFloor {
	rf := ReturnFloor{Cost: cost, KthLoginS: map[string]float64{}, FirstSecondsRate: map[string]float64{},
		Logins: len(oks), Failed: failed, WindowS: window.Seconds(),
		MeasuredUnder: fmt.Sprintf("%d clients logging in back to back from the node answering CQL after SIGKILL and restart, raw CQL v4, nothing else running", conc)}
	for _, k := range ks {
		if k >= 1 && k <= len(oks) {
			rf.KthLoginS[strconv.Itoa(k)] = round2(oks[k-1])
		}
	}
	for n := 10; n <= int(window.Seconds()); n += 10 {
		i, _ := slices.BinarySearch(oks, float64(n))
		rf.FirstSecondsRate[strconv.Itoa(n)] = math.Round(float64(i)/float64(n)*10) / 10
	}
	return rf
}

// line is one sample in words: the k-th logins, the first seconds' rates, the failures.
func (rf ReturnFloor) line() string {
	var b strings.Builder
	b.WriteString("k-th login after the node answered:")
	for _, k := range sortedKeys(rf.KthLoginS) {
		fmt.Fprintf(&b, " %s at %.2f s,", k, rf.KthLoginS[k])
	}
	fmt.Fprintf(&b, " %d logins in %.0f s; logins/s over the first", rf.Logins, rf.WindowS)
	for _, n := range sortedKeys(rf.FirstSecondsRate) {
		fmt.Fprintf(&b, " %s s %.1f,", n, rf.FirstSecondsRate[n])
	}
	fmt.Fprintf(&b, " %d failed", rf.Failed)
	if rf.ServerCPUS > 0 {
		fmt.Fprintf(&b, "; the node's CPU %.1f s, %.0f ms a login", rf.ServerCPUS, rf.CPUPerLoginMs)
		if rf.JITCPUS > 0 {
			fmt.Fprintf(&b, " (its JIT compiler threads %.1f s)", rf.JITCPUS)
		}
	}
	return b.String()
}

// returnFloorLines is the return floors by cost: each k-th login's p50 and range over the
// samples, under the table (BENCHMARKS.md, docs/fleet.md).
func returnFloorLines(floors map[string][]ReturnFloor) string {
	var b strings.Builder
	for _, c := range sortedKeys(floors) {
		samples := floors[c]
		plural := "s"
		if len(samples) == 1 {
			plural = ""
		}
		fmt.Fprintf(&b, "Return floor at bcrypt cost %s (%d sample%s after SIGKILL, the k-th login after the node answered, p50 (min–max)):", c, len(samples), plural)
		ks := map[string]bool{}
		for _, s := range samples {
			for k := range s.KthLoginS {
				ks[k] = true
			}
		}
		for _, k := range sortedKeys(ks) {
			var v []float64
			for _, s := range samples {
				if t, ok := s.KthLoginS[k]; ok {
					v = append(v, t)
				}
			}
			slices.Sort(v)
			fmt.Fprintf(&b, " k = %s: %.2f s (%.2f–%.2f", k, quantile(v, 0.5), v[0], v[len(v)-1])
			if len(v) < len(samples) {
				fmt.Fprintf(&b, ", not reached in %d", len(samples)-len(v))
			}
			b.WriteString(");")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sortedKeys is m's keys in numeric order (keys are decimal integers).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return keys
}
