package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
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

// measureFloor is the node's login throughput: conc clients logging in back to back for
// warm then for window; the logins that succeeded in window, per second.
func measureFloor(addr, user, password string, conc int, warm, window time.Duration) (float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var counting atomic.Bool
	var ok, failed atomic.Int64
	var lastErr atomic.Value
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
				err := login(lctx, addr, user, password)
				lcancel()
				if !counting.Load() {
					continue
				}
				if err != nil {
					failed.Add(1)
					lastErr.Store(err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	time.Sleep(warm)
	counting.Store(true)
	begin := time.Now()
	time.Sleep(window)
	n := ok.Load()
	took := time.Since(begin)
	cancel()
	wg.Wait()
	if n == 0 {
		return 0, fmt.Errorf("no login succeeded in %v (%d failed, last: %v)", window, failed.Load(), lastErr.Load())
	}
	return float64(n) / took.Seconds(), nil
}
