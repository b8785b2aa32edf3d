package integration

// Figures of the last run (go test -race ./integration/, 2 shared cores, 2026-11-30):
//
//	DelayCap 2 s: 3 attempts (9 dials) in 5 s, 2.002 s and 2.003 s apart, each non_retryable;
//	Status().LastErrClass auth with the server's message, an ERROR log line with class=auth;
//	back 1016.1 ms after the credentials were accepted

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cluster rejects the control connection's credentials, then accepts them again.
//
// Contract: a clear error in Status() and in the log; at most one attempt per DelayCap while
// rejected; recovery once the credentials are accepted.

const (
	authDelayCap = 2 * time.Second
	authWatch    = 5 * time.Second
)

// logBuffer is an io.Writer for a slog handler that tests read while the control connection
// writes to it from its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAuthenticationRejectedThenAccepted(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 3, Username: "cassandra", Password: "rotated"})
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rec := new(clientprobe.Recorder)
	cfg := blindConfig(sim, controlconn.Cadence{DelayCap: authDelayCap})
	cfg.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "cassandra"}
	cc, err := newBlind(cfg, controlconn.WithLogger(logger),
		controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()

	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = cc.Start(ctx)
	cancel()
	require.Error(t, err, "Start reports that it is not connected")
	t.Logf("Start: %v", err)
	time.Sleep(time.Until(begin.Add(authWatch)))
	watchEnd := time.Now()

	st := cc.Status()
	rejected := st.LastErr
	require.Error(t, rejected)
	assert.Equal(t, controlconn.ClassAuth, st.LastErrClass, "Status classifies the failure: %v", st.LastErr)
	assert.Contains(t, st.LastErr.Error(), "Provided username", "Status carries the server's message")
	logged := logs.String()
	assert.True(t, strings.Contains(logged, "level=ERROR") && strings.Contains(logged, "class=auth"),
		"the log has an error with class auth:\n%s", logged)

	attempts := rec.AttemptsIn(begin, watchEnd)
	dials := rec.DialsIn(begin, watchEnd)
	var gaps []time.Duration
	for i := 1; i < len(attempts); i++ {
		gap := attempts[i].Started.Sub(attempts[i-1].Started)
		gaps = append(gaps, gap)
		assert.GreaterOrEqual(t, gap, authDelayCap, "attempts %d and %d are at least DelayCap apart", i, i+1)
	}
	assert.LessOrEqual(t, len(attempts), 1+int(authWatch/authDelayCap), "at most one attempt per DelayCap")
	for _, a := range attempts {
		if a.Outcome != "" {
			assert.Equal(t, "non_retryable", string(a.Outcome))
		}
	}

	fixedAt := time.Now()
	sim.SetCredentials("cassandra", "cassandra")
	connectedAt, _ := connectedAfter(t, cc, fixedAt, authDelayCap+2*time.Second)
	st = cc.Status()
	t.Logf("FIGURE auth rejected (DelayCap %v): %d attempts and %d dials in %v, gaps %v; Status().LastErr %q; back %s after the credentials were accepted",
		authDelayCap, len(attempts), len(dials), authWatch, gaps, rejected, realtime.Millis(connectedAt.Sub(fixedAt)))
	t.Logf("log line: %s", firstLine(logged, "class=auth"))
	assert.LessOrEqual(t, connectedAt.Sub(fixedAt), authDelayCap+500*time.Millisecond, "recovered within DelayCap of the fix")
	assert.NoError(t, st.LastErr)
}

func firstLine(s, containing string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, containing) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
