package integration

// Figures of the last run (go test -race ./integration/, 2 shared cores, 2026-11-30):
//
//	2 s restart: 9 writes before, 41 during (failing fast, slowest 4.6 ms), 38 after with
//	none failed; first write succeeded 40.9 ms after node_up, control connection back
//	32.1 ms after node_up; the listener saw 6 HostUp and 7 HostDown from gocql

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sanity: with the listener installed in its policy, the application's gocql Session keeps
// working on the cluster before, during and after a full restart; the wrapper only observes.

// hostEventCounter counts the host events the listener delivers, by source and kind.
type hostEventCounter struct {
	hostevents.NopQueueObserver
	mu       sync.Mutex
	received map[string]int // "source/kind"; guarded by mu
}

func (c *hostEventCounter) Received(e hostevents.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.received[string(e.Source)+"/"+e.Kind.String()]++
}

func (c *hostEventCounter) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.received[key]
}

type writeResult struct {
	at   time.Time
	took time.Duration
	err  error
	key  string
}

func TestGocqlSessionWorksThroughRestart(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 3})
	cluster := gocqlCluster(sim)
	events := &hostEventCounter{received: map[string]int{}}
	cc, session := attachSession(t, cluster, controlconn.Cadence{StableAfter: 500 * time.Millisecond}, 10*time.Second,
		controlconn.WithQueueConfig(hostevents.QueueConfig{Observer: events}))

	require.NoError(t, session.Query(`CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}`).Exec())
	require.NoError(t, session.Query(`CREATE TABLE ks.kv (k text PRIMARY KEY, v int)`).Exec())
	require.NoError(t, session.Query(`INSERT INTO ks.kv (k, v) VALUES (?, ?)`, "before", 1).Exec())
	// gocql handles the SCHEMA_CHANGE events of the DDL a debounce second later, in a goroutine
	// that waits for schema agreement and ignores Session.Close (up to MaxWaitSchemaAgreement,
	// 60 s by default). Let that happen before the restart, or it outlives the session.
	time.Sleep(1500 * time.Millisecond)

	// One writer through the whole restart, a write every 50 ms.
	var (
		mu      sync.Mutex
		results []writeResult
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			key := fmt.Sprintf("k%d", i)
			begin := time.Now()
			err := session.Query(`INSERT INTO ks.kv (k, v) VALUES (?, ?)`, key, i).Exec()
			mu.Lock()
			results = append(results, writeResult{at: begin, took: time.Since(begin), err: err, key: key})
			mu.Unlock()
		}
	}()

	time.Sleep(500 * time.Millisecond)
	begin := time.Now()
	require.NoError(t, sim.Restart(2*time.Second))
	up, ok := firstEvent(sim, begin, kind(cqlsim.EventNodeUp))
	require.True(t, ok)
	var firstOK time.Time
	realtime.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results {
			if r.at.After(up.At) && r.err == nil {
				firstOK = r.at.Add(r.took)
				return true
			}
		}
		return false
	}, "a write succeeds after the restart")
	time.Sleep(2 * time.Second) // gocql refills every pool on its 1 s reconnect tick
	close(stop)
	<-done
	connectedAt, _ := connectedAfter(t, cc, up.At, 10*time.Second)

	var before, during, after, failedAfter int
	var slowest time.Duration
	var written []string
	for _, r := range results {
		slowest = max(slowest, r.took)
		switch {
		case r.at.Before(begin):
			before++
			require.NoError(t, r.err, "writes before the restart succeed")
		case r.at.Before(firstOK):
			during++
		default:
			after++
			if r.err != nil {
				failedAfter++
			}
		}
		if r.err == nil {
			written = append(written, r.key)
		}
	}
	t.Logf("FIGURE gocql session through a 2 s restart: %d writes before, %d during, %d after (%d failed); first write succeeded %s after node_up; control connection back %s after node_up; slowest write %s; host events from gocql: %d up, %d down",
		before, during, after, failedAfter, realtime.Millis(firstOK.Sub(up.At)), realtime.Millis(connectedAt.Sub(up.At)), realtime.Millis(slowest),
		events.count("gocql/up"), events.count("gocql/down"))
	assert.Positive(t, before)
	assert.Positive(t, after)
	assert.Zero(t, failedAfter, "every write after the first success succeeds")
	assert.LessOrEqual(t, firstOK.Sub(up.At), 5*time.Second, "the session is back within a few reconnect ticks")
	assert.LessOrEqual(t, slowest, cluster.Timeout+time.Second, "no write hangs during the restart")
	assert.Positive(t, events.count("gocql/up"), "the listener saw gocql's HostUp")

	var v int
	require.NoError(t, session.Query(`SELECT v FROM ks.kv WHERE k = ?`, "before").Scan(&v))
	assert.Equal(t, 1, v, "data written before the restart is read after it")
	require.GreaterOrEqual(t, len(written), 5)
	for _, key := range written[len(written)-5:] {
		require.NoError(t, session.Query(`SELECT v FROM ks.kv WHERE k = ?`, key).Scan(&v), key)
	}
}
