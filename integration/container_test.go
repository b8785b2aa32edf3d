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
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
)

// ctrImageEnv names a real image to run instead of the simulator's, for users who have a registry. It must
// take the scylladb/scylla image's flags (--seeds, --smp, --memory, ...), e.g. scylladb/scylla:6.2.
const ctrImageEnv = "CQLCONTROL_TEST_IMAGE"

// ctrCQLPort is the CQL port of every node container.
const ctrCQLPort = "9042"

// TestContainerClusterRestart is the container smoke test: three node containers of the project's image
// (the Dockerfile, built here FROM scratch) on a network the test creates, with fixed addresses so that
// each node is given the same static peer list. A gocql session that knows only the first node discovers
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
	nw, ips := ctrNetwork(ctx, t, 3)
	nodes := make([]testcontainers.Container, len(ips))
	for i, ip := range ips {
		nodes[i] = ctrStartNode(ctx, t, img, nw, ip, ips)
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

// ctrDocker returns a Docker provider, skipping the test when no Docker engine is reachable.
func ctrDocker(ctx context.Context, t *testing.T) *testcontainers.DockerProvider {
	t.Helper()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.TestLogger(t)))
	if err != nil {
		t.Skipf("Docker engine not reachable, container test skipped: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Health(ctx); err != nil {
		t.Skipf("Docker engine not reachable, container test skipped: %v", err)
	}
	return p
}

// ctrImage is the node image and how to run it.
type ctrImage struct {
	ref      string
	args     func(ip string, ips []string) []string
	derived  bool          // host IDs are cqlsim.StaticIdentity's
	start    time.Duration // how long a node may take to open its CQL port
	converge time.Duration // how long the session may take to reach every node
}

// ctrNodeImage builds the project's image, or takes the real one ctrImageEnv names.
func ctrNodeImage(ctx context.Context, t *testing.T, p *testcontainers.DockerProvider) ctrImage {
	t.Helper()
	if ref := os.Getenv(ctrImageEnv); ref != "" {
		return ctrImage{
			ref: ref,
			args: func(_ string, ips []string) []string {
				return []string{"--seeds=" + ips[0], "--smp", "1", "--memory", "750M", "--overprovisioned", "1", "--developer-mode", "1"}
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
		args: func(_ string, ips []string) []string {
			return []string{"--peers", strings.Join(ips, ",")}
		},
		derived:  true,
		start:    30 * time.Second,
		converge: 30 * time.Second,
	}
}

// ctrNetwork creates a bridge network with a subnet of its own, so that containers keep fixed addresses
// across restarts, and returns the n node addresses in it. Docker refuses a subnet that overlaps one of its
// networks, so a few random ones are tried.
func ctrNetwork(ctx context.Context, t *testing.T, n int) (*testcontainers.DockerNetwork, []string) {
	t.Helper()
	var lastErr error
	for range 10 {
		base := netip.AddrFrom4([4]byte{172, byte(24 + rand.IntN(8)), byte(rand.IntN(256)), 0})
		nw, err := tcnetwork.New(ctx, tcnetwork.WithIPAM(&network.IPAM{
			Config: []network.IPAMConfig{{Subnet: netip.PrefixFrom(base, 24)}},
		}))
		if err != nil {
			lastErr = err
			continue
		}
		testcontainers.CleanupNetwork(t, nw)
		ips := make([]string, n)
		for i := range ips {
			b := base.As4()
			b[3] = byte(11 + i)
			ips[i] = netip.AddrFrom4(b).String()
		}
		return nw, ips
	}
	t.Fatalf("no free subnet for the test network: %v", lastErr)
	return nil, nil
}

// ctrStartNode starts one node container at ip and waits until its CQL port accepts.
func ctrStartNode(ctx context.Context, t *testing.T, img ctrImage, nw *testcontainers.DockerNetwork, ip string, ips []string) testcontainers.Container {
	t.Helper()
	addr := netip.MustParseAddr(ip)
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:    img.ref,
			Cmd:      img.args(ip, ips),
			Networks: []string{nw.Name},
			EndpointSettingsModifier: func(eps map[string]*network.EndpointSettings) {
				if eps[nw.Name] == nil {
					eps[nw.Name] = &network.EndpointSettings{}
				}
				eps[nw.Name].IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: addr}
			},
		},
		Started: true,
		Logger:  tclog.TestLogger(t),
	})
	testcontainers.CleanupContainer(t, c)
	require.NoError(t, err, "starting the node at %s", ip)
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
