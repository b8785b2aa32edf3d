package real

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bufLogger is a gocql StdLogger writing into a buffer.
type bufLogger struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *bufLogger) Print(v ...any) { l.mu.Lock(); defer l.mu.Unlock(); fmt.Fprintln(&l.b, v...) }
func (l *bufLogger) Printf(f string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, f+"\n", v...)
}
func (l *bufLogger) Println(v ...any) { l.Print(v...) }
func (l *bufLogger) String() string   { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// syncBuffer is a bytes.Buffer safe for concurrent writes (slog's handler, a process's output).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// secrets returns the strings that must appear nowhere: the password and the client key,
// whole and as each line of its PEM body.
func secrets(t *testing.T, password, keyFile string) []string {
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	out := []string{password, string(key)}
	for _, line := range strings.Split(string(key), "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

// A wrong password on real Cassandra with mutual TLS and PasswordAuthenticator: everything
// ours exposes is captured (slog at every level, gocql's log, every metric's labels and
// values, Status, Start's error and the last error, and the CLI's watch output with -v), and
// none may hold the password or the client key's bytes. The same node with another CA for
// watch: one line, exit 1.
func TestCredentialsNeverExposed(t *testing.T) {
	realcluster.RequireReal(t)
	c := realcluster.StartT(t, realcluster.Config{Nodes: 1, BaseIP: "127.0.0.135", PasswordAuth: true,
		TLS: &realcluster.TLS{RequireClientAuth: true}, Logf: logf})
	client, err := c.ClientPair("client", realcluster.CertOptions{})
	require.NoError(t, err)
	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	password := "pw-" + hex.EncodeToString(raw)
	forbidden := secrets(t, password, client.KeyFile)

	// The default superuser exists about 10 s after the first start.
	good := newCluster(c, &clientprobe.Dialer{})
	good.SslOpts = sslOpts(c, client)
	good.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "cassandra"}
	realtime.Eventually(t, 90*time.Second, func() bool {
		s, err := good.CreateSession()
		if err == nil {
			s.Close()
		}
		return err == nil
	}, "the default superuser can log in")

	logs := &syncBuffer{}
	glog := &bufLogger{}
	col, err := metrics.New(metrics.Options{})
	require.NoError(t, err)
	bad := newCluster(c, &clientprobe.Dialer{})
	bad.SslOpts = sslOpts(c, client)
	bad.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: password}
	bad.Logger = glog
	cc, err := controlconn.New(bad, controlconn.Cadence{DelayCap: time.Second},
		controlconn.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.Level(-16)}))),
		controlconn.WithObserver(col.Observer()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	startErr := cc.Start(ctx)
	cancel()
	require.Error(t, startErr)
	time.Sleep(2 * time.Second) // more attempts, each logged and counted
	st := cc.Status()
	require.NoError(t, cc.Close())
	assert.Equal(t, controlconn.ClassAuth, st.LastErrClass, "%v", st.LastErr)
	fams, err := col.Gatherer().Gather()
	require.NoError(t, err)
	var m strings.Builder
	for _, f := range fams {
		fmt.Fprintln(&m, f.String())
	}
	_, sessErr := bad.CreateSession()

	bin := filepath.Join(t.TempDir(), "cqlcontrol")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/cqlcontrol/cqlcontrol/cmd/cqlcontrol").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	watch := func(ca string, extra ...string) (string, string, error) {
		args := append([]string{"watch", "--hosts", c.Hosts()[0], "--connect-timeout", "8s", "--metrics", "",
			"--tls-ca", ca, "--tls-cert", client.CertFile, "--tls-key", client.KeyFile}, extra...)
		cmd := exec.Command(bin, args...)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		return so.String(), se.String(), err
	}
	wout, werr, err := watch(c.TLS().PKI.CAFile, "--username", "cassandra", "--password", password, "-v")
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "watch with a wrong password: %v", err)
	assert.Equal(t, 1, exit.ExitCode(), "watch with a wrong password: exit code")

	captured := map[string]string{
		"slog (all levels)": logs.String(), "gocql log": glog.String(), "metrics": m.String(),
		"Status": fmt.Sprintf("%+v", st), "Status.LastErr": fmt.Sprint(st.LastErr), "Status.LastLoss": fmt.Sprint(st.LastLoss),
		"Start error": startErr.Error(), "gocql CreateSession error": fmt.Sprint(sessErr),
		"watch stdout": wout, "watch stderr": werr,
	}
	for name, s := range captured {
		if name != "gocql log" { // gocql may log nothing for a refused login
			require.NotEmpty(t, strings.TrimSpace(s), "%s captured nothing", name)
		}
		for i, f := range forbidden {
			assert.NotContains(t, s, f, "%s exposes a credential (secret %d)", name, i)
		}
	}
	t.Logf("captured %d bytes of slog, %d of gocql log, %d of metrics, %d of watch output; last error: %v",
		len(logs.String()), len(glog.String()), m.Len(), len(wout)+len(werr), st.LastErr)

	// watch with another CA: exit 1, one line on stderr (stdout has watch's progress lines).
	other, err := realcluster.NewPKI(t.TempDir())
	require.NoError(t, err)
	wout, werr, err = watch(other.CAFile, "--username", "cassandra", "--password", "cassandra")
	require.True(t, errors.As(err, &exit), "watch with another CA: %v", err)
	assert.Equal(t, 1, exit.ExitCode(), "watch with another CA: exit code")
	lines := strings.Split(strings.TrimSpace(werr), "\n")
	t.Logf("watch with another CA: exit %d: stderr %q; stdout %q", exit.ExitCode(), lines, wout)
	assert.Len(t, lines, 1, "watch with another CA: one line on stderr")
	assert.Contains(t, strings.Join(lines, ""), "unknown authority")
}
