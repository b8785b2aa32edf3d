package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// ctrProvider is the container cluster as a realcluster.Provider, so that the restart suites
// run against it as against real Cassandra processes and cqlsim in-process: Stop is a docker
// stop (SIGTERM), Kill a docker kill, Pause a docker pause (the cgroup freezer: half-open),
// Start a docker start that returns once the node answers CQL.
type ctrProvider struct {
	docker  *testcontainers.DockerProvider
	img     ctrImage
	ips     []string
	nodes   []testcontainers.Container
	mu      sync.Mutex
	readyAt []time.Time
}

var _ realcluster.Provider = (*ctrProvider)(nil)

func (c *ctrProvider) Name() string      { return "containers " + c.img.ref }
func (c *ctrProvider) Hosts() []string   { return c.ips }
func (c *ctrProvider) Port() int         { p, _ := strconv.Atoi(ctrCQLPort); return p }
func (c *ctrProvider) Close() error      { return nil } // testcontainers.CleanupContainer ends them
func (c *ctrProvider) id(i int) string   { return c.nodes[i].GetContainerID() }
func (c *ctrProvider) addr(i int) string { return c.ips[i] + ":" + ctrCQLPort }

func (c *ctrProvider) Stop(i int) error {
	stop := 10 * time.Second
	return c.nodes[i].Stop(context.Background(), &stop)
}

func (c *ctrProvider) Kill(i int) error {
	_, err := c.docker.Client().ContainerKill(context.Background(), c.id(i), client.ContainerKillOptions{Signal: "SIGKILL"})
	return err
}

func (c *ctrProvider) Pause(i int) error {
	_, err := c.docker.Client().ContainerPause(context.Background(), c.id(i), client.ContainerPauseOptions{})
	return err
}

func (c *ctrProvider) Resume(i int) error {
	_, err := c.docker.Client().ContainerUnpause(context.Background(), c.id(i), client.ContainerUnpauseOptions{})
	return err
}

func (c *ctrProvider) Start(ctx context.Context, i int) error {
	if err := c.nodes[i].Start(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(c.img.start)
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := realcluster.AnswersCQL(hctx, c.addr(i))
		cancel()
		if err == nil {
			c.mu.Lock()
			c.readyAt[i] = time.Now()
			c.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer CQL within %v: %w", c.addr(i), c.img.start, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *ctrProvider) ReadyAt(i int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readyAt[i]
}

// startCtrProvider starts n node containers bound to first, first+1, ... on the host's network
// as a Provider (skipping without a Docker engine).
func startCtrProvider(ctx context.Context, t *testing.T, first string, n int) *ctrProvider {
	t.Helper()
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true") // the reaper's image cannot be pulled without a registry
	}
	docker := ctrDocker(ctx, t)
	img := ctrNodeImage(ctx, t, docker)
	ips := ctrAddrs(first, n)
	p := &ctrProvider{docker: docker, img: img, ips: ips, readyAt: make([]time.Time, n)}
	for _, ip := range ips {
		p.nodes = append(p.nodes, ctrStartNode(ctx, t, img, ip, ips))
	}
	now := time.Now()
	for i := range p.readyAt {
		p.readyAt[i] = now
	}
	return p
}

// The container cluster driven through the Provider verbs the restart suites use: a full
// restart (every node answers CQL again, ReadyAt after the stop), a kill and a start, a pause
// (half-open: no CQL answer) and a resume. Skipped, saying why, without a Docker engine.
func TestContainerProviderVerbs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := startCtrProvider(ctx, t, "127.0.0.127", 3)
	down, err := realcluster.FullRestart(ctx, p, 2*time.Second, false)
	require.NoError(t, err)
	first := realcluster.FirstReady(p, down)
	require.False(t, first.IsZero(), "every node answered CQL after the restart")
	assert.GreaterOrEqual(t, first.Sub(down), 2*time.Second)
	t.Logf("FIGURE %s full restart, 2 s down: first node answered CQL %v after the last was down", p.Name(), first.Sub(down))

	require.NoError(t, p.Kill(2))
	require.Error(t, realcluster.AnswersCQL(ctx, p.addr(2)), "a killed node does not answer")
	require.NoError(t, p.Start(ctx, 2))

	require.NoError(t, p.Pause(1))
	hctx, hcancel := context.WithTimeout(ctx, time.Second)
	err = realcluster.AnswersCQL(hctx, p.addr(1))
	hcancel()
	require.Error(t, err, "a paused node does not answer")
	require.NoError(t, p.Resume(1))
	require.NoError(t, realcluster.AnswersCQL(ctx, p.addr(1)), "a resumed node answers")
}
