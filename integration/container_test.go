package integration

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/realcluster/containers"
)

// ctrImageEnv names a real image to run instead of the simulator's, for users who have a registry. It must
// take the scylladb/scylla image's flags (--seeds, --smp, --memory, ...), e.g. scylladb/scylla:6.2.
const ctrImageEnv = "CQLCONTROL_TEST_IMAGE"

// ctrCQLPort is the CQL port of every node container.
const ctrCQLPort = "9042"

// TestContainerClusterRestart is the container smoke test: three node containers of the project's image
// (the Dockerfile, built here FROM scratch) on host networking, each bound to a loopback address of its
// own (127.0.0.121-123), so that each node is given the same static peer list. A gocql session that knows only the first node discovers
// all three and reaches each of them; then all three containers are stopped (SIGTERM) and started again,
// and the session reaches all three again.
func TestContainerClusterRestart(t *testing.T) {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true") // the reaper's image cannot be pulled without a registry
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	lap := func(what string) {
		t.Logf("%-44s %v", what, time.Since(began).Round(time.Millisecond))
		began = time.Now()
	}

	provider := ctrDocker(ctx, t)
	img := ctrNodeImage(ctx, t, provider)
	lap("image " + img.ref + " ready")
	ips := ctrAddrs("127.0.0.121", 3)
	nodes := make([]testcontainers.Container, len(ips))
	for i, ip := range ips {
		nodes[i] = ctrStartNode(ctx, t, img, ip, ips)
	}
	lap("3 node containers started")

	rec := &ctrHosts{seen: map[string]string{}}
	session := ctrSession(t, ips[0], rec)
	want := map[string]string{} // host ID -> address, for the image whose identities are derived
	if img.derived {
		for _, ip := range ips {
			id, _, _ := cqlsim.StaticIdentity(net.ParseIP(ip), 1, cqlsim.DefaultTokensPerNode)
			want[id] = ip
		}
	}
	ctrEventually(t, img.converge, "the session discovers all three nodes", func() bool { return len(rec.hosts()) == 3 })
	if img.derived {
		require.Equal(t, want, rec.hosts(), "host IDs are the ones derived from the containers' addresses")
	}
	ctrEventually(t, img.converge, "queries reach all three nodes", func() bool { return ctrServing(session) == 3 })
	lap("gocql session discovered and reached all 3")

	for _, n := range nodes {
		stop := 10 * time.Second
		require.NoError(t, n.Stop(ctx, &stop))
	}
	for _, ip := range ips {
		c, err := net.DialTimeout("tcp4", net.JoinHostPort(ip, ctrCQLPort), 500*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		require.Error(t, err, "%s is stopped", ip)
	}
	ctrEventually(t, 30*time.Second, "queries fail while every node is down", func() bool {
		return session.Query("SELECT host_id FROM system.local").Exec() != nil
	})
	lap("all 3 stopped")

	for i, n := range nodes {
		require.NoError(t, n.Start(ctx))
		ctrAwaitPort(ctx, t, ips[i], img.start)
	}
	lap("all 3 started again")
	ctrEventually(t, img.converge, "after the restart, queries reach all three nodes again", func() bool {
		return ctrServing(session) == 3
	})
	lap("gocql session reached all 3 again")
	if img.derived {
		require.Equal(t, want, rec.hosts(), "the same three hosts, same identities")
	}
}

// ctrUnavailable skips the test, or fails it when containers.EnvRequired is set (make
// containers sets it): a run that is meant to exercise the containers cannot pass without.
func ctrUnavailable(t *testing.T, format string, a ...any) {
	t.Helper()
	if os.Getenv(containers.EnvRequired) != "" {
		t.Fatalf(format+" (%s is set: the container suite must run)", append(a, containers.EnvRequired)...)
	}
	t.Skipf(format, a...)
}

// ctrDocker returns a Docker provider, skipping the test when no Docker engine is reachable.
func ctrDocker(ctx context.Context, t *testing.T) *testcontainers.DockerProvider {
	t.Helper()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.TestLogger(t)))
	if err != nil {
		ctrUnavailable(t, "Docker engine not reachable, container test skipped: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Health(ctx); err != nil {
		ctrUnavailable(t, "Docker engine not reachable, container test skipped: %v", err)
	}
	return p
}

// ctrImage is the node image and how to run it.
type ctrImage struct {
	ref      string
	args     func(ip string, ips []string) []string // the node at ip binds ip only (host networking)
	derived  bool                                   // host IDs are cqlsim.StaticIdentity's
	start    time.Duration                          // how long a node may take to open its CQL port
	converge time.Duration                          // how long the session may take to reach every node
}

// ctrNodeImage builds the project's image, or takes the real one ctrImageEnv names.
func ctrNodeImage(ctx context.Context, t *testing.T, p *testcontainers.DockerProvider) ctrImage {
	t.Helper()
	if ref := os.Getenv(ctrImageEnv); ref != "" {
		return ctrImage{
			ref: ref,
			args: func(ip string, ips []string) []string {
				return []string{"--listen-address", ip, "--rpc-address", ip, "--seeds=" + ips[0],
					"--smp", "1", "--memory", "750M", "--overprovisioned", "1", "--developer-mode", "1"}
			},
			start:    3 * time.Minute,
			converge: 2 * time.Minute,
		}
	}

	// The static binary first (as `make image` does), then the Dockerfile on a context holding only it.
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, "cqlcontrol"), "./cmd/cqlcontrol")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), dockerfile, 0o644))

	ref, err := p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context:        dir,
		Dockerfile:     "Dockerfile",
		Repo:           "cqlcontrol-sim-test",
		Tag:            fmt.Sprintf("%d-%08x", os.Getpid(), rand.Uint32()),
		BuildLogWriter: io.Discard,
	}})
	require.NoError(t, err, "docker build")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := p.Client().ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Logf("removing image %s: %v", ref, err)
		}
	})
	return ctrImage{
		ref: ref,
		// The image's entrypoint binds 0.0.0.0 (for a network of its own, docker-compose.yml); on
		// the host's network the node binds its own address only, and the control API is off.
		// A flag given again overrides the entrypoint's.
		args: func(ip string, ips []string) []string {
			return []string{"--listen", ip, "--control", "", "--peers", strings.Join(ips, ",")}
		},
		derived:  true,
		start:    30 * time.Second,
		converge: 30 * time.Second,
	}
}

// ctrAddrs returns n consecutive loopback addresses from first, one per node container.
func ctrAddrs(first string, n int) []string {
	a := netip.MustParseAddr(first)
	ips := make([]string, n)
	for i := range ips {
		ips[i] = a.String()
		a = a.Next()
	}
	return ips
}

// ctrStartNode starts one node container bound to ip on the host's network and waits until its
// CQL port accepts.
func ctrStartNode(ctx context.Context, t *testing.T, img ctrImage, ip string, ips []string) testcontainers.Container {
	t.Helper()
	c := ctrStart(ctx, t, ctrRequest(img.ref, img.args(ip, ips)), "the node at "+ip)
	ctrAwaitPort(ctx, t, ip, img.start)
	return c
}

// ctrAwaitPort waits until ip's CQL port accepts a connection.
func ctrAwaitPort(ctx context.Context, t *testing.T, ip string, within time.Duration) {
	t.Helper()
	ctrEventually(t, within, "CQL port of "+ip+" accepts", func() bool {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort(ip, ctrCQLPort))
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
}

// ctrSession connects a gocql session to the contact point only; it must find the others itself.
func ctrSession(t *testing.T, contact string, rec *ctrHosts) *gocql.Session {
	t.Helper()
	cfg := gocql.NewCluster(contact)
	cfg.ProtoVersion = 4
	cfg.Timeout = 5 * time.Second
	cfg.ConnectTimeout = 5 * time.Second
	cfg.NumConns = 1
	// gocql refills the pools of hosts other than the control host only on this tick (60 s by default),
	// which this smoke test is not about.
	cfg.ReconnectInterval = time.Second
	rec.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	cfg.PoolConfig.HostSelectionPolicy = rec
	s, err := cfg.CreateSession()
	require.NoError(t, err)
	bounded.Close(t, "gocql Session.Close", s.Close)
	return s
}

// ctrServing counts the distinct nodes that answer a round of round-robin queries.
func ctrServing(s *gocql.Session) int {
	seen := map[string]bool{}
	for range 6 {
		var id gocql.UUID
		if err := s.Query("SELECT host_id FROM system.local").Scan(&id); err == nil {
			seen[id.String()] = true
		}
	}
	return len(seen)
}

// ctrHosts records the hosts gocql tells its policy about.
type ctrHosts struct {
	gocql.HostSelectionPolicy
	mu   sync.Mutex
	seen map[string]string // host ID -> address; guarded by mu
}

func (r *ctrHosts) note(h *gocql.HostInfo) {
	r.mu.Lock()
	r.seen[h.HostID()] = h.ConnectAddress().String()
	r.mu.Unlock()
}

func (r *ctrHosts) AddHost(h *gocql.HostInfo) { r.HostSelectionPolicy.AddHost(h); r.note(h) }
func (r *ctrHosts) HostUp(h *gocql.HostInfo)  { r.HostSelectionPolicy.HostUp(h); r.note(h) }

func (r *ctrHosts) hosts() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

// ctrEventually polls cond until it holds or d passes.
func ctrEventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
