// Package containers runs real Apache Cassandra nodes in containers, through testcontainers-go
// and the Docker API, as a realcluster.Provider: the restart verbs are the engine's (Stop is
// docker stop, Kill docker kill, Pause docker pause, Start docker start), so that a test can
// restart a whole cluster of containers in a few lines, as it does with realcluster's JVMs.
//
// The node image is built locally, once, and kept: FROM a Java 17 runtime image (JREImage; a
// machine without a registry imports one of its own) with the jars realcluster.Resolve gets
// with Maven copied in. Every node runs on the host's network, bound to a loopback address of
// its own (BaseIP, BaseIP+1, ...) exactly as realcluster lays a cluster out (the same
// cassandra.yaml and java command line, from realcluster.Layout), and its directory (conf,
// data, logs/system.log) is the host's, mounted at the same path, so that data survives a
// restart and the logs can be read from the test. A container is refused, before it starts,
// if the engine created it with any other network mode: with a bridge network, an engine that
// removes the bridge with its last container would send traffic to the stopped containers'
// addresses out through the default gateway.
//
// Needs a Docker API engine (DOCKER_HOST; testcontainers' reaper may be off:
// TESTCONTAINERS_RYUK_DISABLED=true) and, on the host, java and mvn for Resolve. StartT skips
// a test, saying why, where either is missing, or fails it where EnvRequired is set (a CI job
// meant to run them).
package containers

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// DefaultJREImage is the base of the node image when Config.JREImage is empty.
const DefaultJREImage = "eclipse-temurin:17-jre"

// ImageRepo is the repository of the node images this package builds (tagged with the
// Cassandra version and a digest of what the image is made of).
const ImageRepo = "cqlcontrol-cassandra"

// Label marks every container this package starts (its value: the owning process's pid).
const Label = "org.cqlcontrol.realcluster"

// libDir is where the node image holds Cassandra's jars.
const libDir = "/opt/cassandra/lib"

// ErrNoEngine is returned (wrapped) when no Docker API engine answers.
var ErrNoEngine = errors.New("containers: no Docker API engine")

// Config is the cluster: realcluster's layout (Nodes, BaseIP, Port, StoragePort, Version,
// HeapMB, YAML, JVMOptions, StartTimeout, StopTimeout, Logf, Dir, as realcluster.Start takes
// them) and the image to build the nodes' from.
type Config struct {
	realcluster.Config
	// JREImage is a Java 17 runtime image with java on PATH, DefaultJREImage when empty.
	JREImage string
}

// Cluster is a running set of Cassandra containers. It implements realcluster.Provider; its
// methods are safe for concurrent use.
type Cluster struct {
	cfg      Config
	image    string
	dir      string
	tempDir  bool
	layout   []realcluster.NodeLayout
	provider *testcontainers.DockerProvider

	mu     sync.Mutex
	ctrs   []testcontainers.Container
	ready  []time.Time
	closed bool
}

var _ realcluster.Provider = (*Cluster)(nil)

// Start resolves Cassandra (realcluster.Resolve), builds the node image if it is not there
// yet, writes one directory per node and starts every node's container, returning once each
// answers a CQL handshake. On error every container it started is removed.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg = withDefaults(cfg)
	inst, err := realcluster.Resolve(cfg.Version)
	if err != nil {
		return nil, err
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	if err := provider.Health(ctx); err != nil {
		_ = provider.Close()
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	c := &Cluster{cfg: cfg, dir: cfg.Dir, provider: provider}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "cqlcontrol-containers-"); err != nil {
			_ = provider.Close()
			return nil, fmt.Errorf("containers: %w", err)
		}
		c.tempDir = true
	}
	fail := func(err error) (*Cluster, error) {
		return nil, errors.Join(err, c.Close())
	}
	if c.image, err = buildImage(ctx, provider, cfg.JREImage, inst, cfg.Logf); err != nil {
		return fail(err)
	}
	lc := cfg.Config
	lc.Dir = c.dir
	if c.layout, err = realcluster.Layout(lc, inst, libDir); err != nil {
		return fail(err)
	}
	for _, n := range c.layout {
		if conn, err := net.DialTimeout("tcp", c.addr(n.Index), 200*time.Millisecond); err == nil {
			_ = conn.Close()
			return fail(fmt.Errorf("containers: %s is already in use (another cluster on these addresses?)", c.addr(n.Index)))
		}
	}
	c.ready = make([]time.Time, len(c.layout))
	for _, n := range c.layout {
		ctr, err := c.create(ctx, n)
		if ctr != nil {
			c.mu.Lock()
			c.ctrs = append(c.ctrs, ctr)
			c.mu.Unlock()
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := c.each(func(i int) error { return c.Start(ctx, i) }); err != nil {
		return fail(err)
	}
	return c, nil
}

func withDefaults(cfg Config) Config {
	if cfg.JREImage == "" {
		cfg.JREImage = DefaultJREImage
	}
	if cfg.Version == "" {
		cfg.Version = realcluster.DefaultVersion
	}
	if cfg.Port == 0 {
		cfg.Port = realcluster.DefaultPort
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = realcluster.DefaultStartTimeout
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = realcluster.DefaultStopTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return cfg
}

// dockerfile is the node image: the runtime, the jars, java as the entrypoint (each container's
// command is a node's java arguments).
func dockerfile(jre string) string {
	return "FROM " + jre + "\nCOPY lib/ " + libDir + "/\nENTRYPOINT [\"java\"]\n"
}

// buildImage builds the node image from jre and inst's jars unless an image of the same
// makings is there, and returns its reference.
func buildImage(ctx context.Context, p *testcontainers.DockerProvider, jre string, inst realcluster.Installation, logf func(string, ...any)) (string, error) {
	jars, err := filepath.Glob(filepath.Join(inst.Lib, "*.jar"))
	if err != nil || len(jars) == 0 {
		return "", fmt.Errorf("containers: no jars in %s", inst.Lib)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", dockerfile(jre))
	if info, err := p.Client().ImageInspect(ctx, jre); err == nil {
		fmt.Fprintf(h, "%s\n", info.ID)
	}
	for _, j := range jars {
		st, err := os.Stat(j)
		if err != nil {
			return "", fmt.Errorf("containers: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(j), st.Size())
	}
	tag := inst.Version + "-" + hex.EncodeToString(h.Sum(nil))[:12]
	ref := ImageRepo + ":" + tag
	if _, err := p.Client().ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	began := time.Now()
	archive, err := os.CreateTemp("", "cqlcontrol-image-*.tar")
	if err != nil {
		return "", fmt.Errorf("containers: %w", err)
	}
	defer func() { _ = archive.Close(); _ = os.Remove(archive.Name()) }()
	if err := writeContext(archive, dockerfile(jre), jars); err != nil {
		return "", fmt.Errorf("containers: build context: %w", err)
	}
	if _, err := archive.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("containers: %w", err)
	}
	var buildLog strings.Builder
	got, err := p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: archive,
		Dockerfile:     "Dockerfile",
		Repo:           ImageRepo,
		Tag:            tag,
		BuildLogWriter: &buildLog,
	}})
	if err != nil {
		return "", fmt.Errorf("containers: building %s from %s: %w: %s", ref, jre, err, lastLines(buildLog.String(), 10))
	}
	logf("containers: built %s from %s and %d jars in %v", got, jre, len(jars), time.Since(began).Round(time.Millisecond))
	return got, nil
}

// writeContext writes the build context: the Dockerfile, and the jars under lib/.
func writeContext(w io.Writer, df string, jars []string) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, df); err != nil {
		return err
	}
	for _, j := range jars {
		if err := addFile(tw, "lib/"+filepath.Base(j), j); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: st.Size(), ModTime: st.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// Request is the container request of node n of a cluster from image: on the host's
// network, its directory mounted at the same path, the node's java arguments.
func Request(image string, n realcluster.NodeLayout) testcontainers.ContainerRequest {
	return testcontainers.ContainerRequest{
		Image:  image,
		Cmd:    n.Args,
		Labels: map[string]string{Label: strconv.Itoa(os.Getpid())},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = network.NetworkHost
			hc.Binds = append(hc.Binds, n.Dir+":"+n.Dir)
		},
	}
}

// create creates node n's container, refusing (removing it unstarted) one the engine did not
// put on the host's network alone.
func (c *Cluster) create(ctx context.Context, n realcluster.NodeLayout) (testcontainers.Container, error) {
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: Request(c.image, n)})
	if err != nil {
		return ctr, fmt.Errorf("containers: creating node%d: %w", n.Index+1, err)
	}
	info, err := ctr.Inspect(ctx)
	if err != nil {
		return ctr, fmt.Errorf("containers: inspecting node%d: %w", n.Index+1, err)
	}
	if err := HostNetworkOnly(info); err != nil {
		return ctr, fmt.Errorf("containers: node%d refused: %w", n.Index+1, err)
	}
	return ctr, nil
}

// HostNetworkOnly says why a container is not on the host's network alone (another network
// mode, another network joined, a published port), or returns nil if it is.
func HostNetworkOnly(info *container.InspectResponse) error {
	if info == nil || info.HostConfig == nil {
		return errors.New("no host config to check the network mode of")
	}
	if mode := info.HostConfig.NetworkMode; mode != network.NetworkHost {
		return fmt.Errorf("network mode %q, not host", mode)
	}
	if len(info.HostConfig.PortBindings) > 0 {
		return fmt.Errorf("published ports %v on the host's network", info.HostConfig.PortBindings)
	}
	if info.NetworkSettings != nil {
		for name := range info.NetworkSettings.Networks {
			if name != network.NetworkHost {
				return fmt.Errorf("attached to network %q besides the host's", name)
			}
		}
	}
	return nil
}

func (c *Cluster) ctr(i int) testcontainers.Container {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctrs[i]
}

func (c *Cluster) addr(i int) string {
	return net.JoinHostPort(c.layout[i].IP, strconv.Itoa(c.cfg.Port))
}

// Name implements realcluster.Provider.
func (c *Cluster) Name() string { return "cassandra " + c.cfg.Version + " containers" }

// Hosts implements realcluster.Provider.
func (c *Cluster) Hosts() []string {
	out := make([]string, len(c.layout))
	for i, n := range c.layout {
		out[i] = n.IP
	}
	return out
}

// Port implements realcluster.Provider.
func (c *Cluster) Port() int { return c.cfg.Port }

// Image returns the node image's reference.
func (c *Cluster) Image() string { return c.image }

// Dir returns the cluster's working directory (node1/, node2/, ...: conf, data, logs).
func (c *Cluster) Dir() string { return c.dir }

// Container returns node i's container.
func (c *Cluster) Container(i int) testcontainers.Container { return c.ctr(i) }

// Stop implements realcluster.Provider: docker stop (SIGTERM, Cassandra announces its
// shutdown; SIGKILL after Config.StopTimeout). It returns when the container has exited.
func (c *Cluster) Stop(i int) error {
	d := c.cfg.StopTimeout
	if err := c.ctr(i).Stop(context.Background(), &d); err != nil {
		return fmt.Errorf("containers: stopping node%d: %w", i+1, err)
	}
	c.cfg.Logf("containers: node%d %s stopped", i+1, c.layout[i].IP)
	return nil
}

// Kill implements realcluster.Provider: docker kill (SIGKILL, nothing announced). It returns
// when the container has exited.
func (c *Cluster) Kill(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := c.ctr(i).GetContainerID()
	if _, err := c.provider.Client().ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("containers: killing node%d: %w", i+1, err)
	}
	for {
		info, err := c.ctr(i).Inspect(ctx)
		if err != nil {
			return fmt.Errorf("containers: node%d after SIGKILL: %w", i+1, err)
		}
		if info.State != nil && !info.State.Running {
			c.cfg.Logf("containers: node%d %s killed", i+1, c.layout[i].IP)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containers: node%d still running 30 s after SIGKILL", i+1)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Pause implements realcluster.Provider: docker pause (the cgroup freezer: connections are
// accepted by the kernel, nothing answers).
func (c *Cluster) Pause(i int) error {
	_, err := c.provider.Client().ContainerPause(context.Background(), c.ctr(i).GetContainerID(), client.ContainerPauseOptions{})
	if err != nil {
		return fmt.Errorf("containers: pausing node%d: %w", i+1, err)
	}
	return nil
}

// Resume implements realcluster.Provider: docker unpause.
func (c *Cluster) Resume(i int) error {
	_, err := c.provider.Client().ContainerUnpause(context.Background(), c.ctr(i).GetContainerID(), client.ContainerUnpauseOptions{})
	if err != nil {
		return fmt.Errorf("containers: resuming node%d: %w", i+1, err)
	}
	return nil
}

// Start implements realcluster.Provider: docker start, then it returns once the node
// answers a CQL handshake, within Config.StartTimeout (and ctx). A node that does not is
// killed, and the error carries the last lines of its system.log.
func (c *Cluster) Start(ctx context.Context, i int) error {
	if err := c.ctr(i).Start(ctx); err != nil {
		return fmt.Errorf("containers: starting node%d: %w", i+1, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	for {
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		err := realcluster.AnswersCQL(hctx, c.addr(i))
		hcancel()
		if err == nil {
			at := time.Now()
			c.mu.Lock()
			c.ready[i] = at
			c.mu.Unlock()
			c.cfg.Logf("containers: node%d %s ready", i+1, c.layout[i].IP)
			return nil
		}
		select {
		case <-ctx.Done():
			_ = c.Kill(i)
			return fmt.Errorf("containers: node%d did not answer CQL within %v: %w: %s", i+1, c.cfg.StartTimeout, err, c.logTail(i))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ReadyAt implements realcluster.Provider.
func (c *Cluster) ReadyAt(i int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready[i]
}

func (c *Cluster) logTail(i int) string {
	b, err := os.ReadFile(filepath.Join(c.layout[i].Dir, "logs", "system.log"))
	if err != nil {
		return "(no system.log)"
	}
	return lastLines(string(b), 15)
}

func lastLines(s string, k int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) each(f func(i int) error) error {
	errs := make([]error, len(c.layout))
	var wg sync.WaitGroup
	for i := range c.layout {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close removes every container the cluster started (killed first), then the working
// directory if Start created it. The node image stays, for the next run. It is safe to call
// more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ctrs := c.ctrs
	c.mu.Unlock()
	var errs []error
	for i, ctr := range ctrs {
		// A paused container is resumed first: not every engine removes one.
		_, _ = c.provider.Client().ContainerUnpause(context.Background(), ctr.GetContainerID(), client.ContainerUnpauseOptions{})
		if err := testcontainers.TerminateContainer(ctr, testcontainers.StopTimeout(0)); err != nil {
			errs = append(errs, fmt.Errorf("containers: removing node%d: %w", i+1, err))
		}
	}
	if c.tempDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.provider.Close())
	return errors.Join(errs...)
}
