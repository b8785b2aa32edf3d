package core

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The storage watch on real sockets: a host whose storage port accepts (a listener at
// 127.0.0.1) is reported open, one whose port refuses (nothing at 127.0.0.2) closed; each up
// host is probed once, and Close stops the watcher within 100 ms with no goroutine left
// (TestMain's goleak). Fails without the watcher (no probe reported) or with probes repeated
// while the hosts stay up.
func TestStorageWatchProbesRealSockets(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	var accepted sync.WaitGroup
	accepted.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)

	var mu sync.Mutex
	seen := map[string]int{}
	obs := observerOf(&Observer{GovernorDecided: func(v string) {
		mu.Lock()
		seen[v]++
		mu.Unlock()
	}})
	gov, err := newDialGovernor(Governor{StoragePort: p}, 0, nil, nil)
	require.NoError(t, err)
	m := gov.join(nil, governorObserver(obs), nil)
	m.Connected([]string{"127.0.0.1:9042", "127.0.0.2:9042"})
	require.Eventually(t, func() bool { return gov.Stats().StorageProbes == 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(3 * storageTick)
	assert.EqualValues(t, 2, gov.Stats().StorageProbes, "each up host probed once")
	mu.Lock()
	assert.Equal(t, map[string]int{governorStorageOpen: 1, governorStorageClosed: 1}, seen)
	mu.Unlock()

	start := time.Now()
	m.Close()
	assert.Less(t, time.Since(start), 100*time.Millisecond, "Close stops the watcher")
	_ = ln.Close()
	accepted.Wait()
}

// StoragePort is a TCP port or zero.
func TestGovernorStoragePortValidated(t *testing.T) {
	for _, p := range []int{-1, 65536} {
		err := Governor{StoragePort: p}.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig, "%d", p)
		assert.Contains(t, err.Error(), "StoragePort must be a TCP port")
	}
	assert.NoError(t, Governor{StoragePort: 7000}.Validate())
	assert.ErrorIs(t, Governor{Off: true, StoragePort: 7000}.Validate(), ErrInvalidConfig, "Off with a field set")
}
