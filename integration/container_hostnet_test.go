package integration

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/blackhole"
	"github.com/cqlcontrol/cqlcontrol/realcluster/containers"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Network safety. Every container of the suite runs on the host's network, each node bound to a
// loopback address of its own, as realcluster's processes are: no bridge network, no container
// subnet, no published port. With a bridge network, an engine may remove the bridge and its
// route when the network's last container stops, and traffic to the stopped containers'
// addresses would then leave through the machine's default gateway, to addresses that are not
// the test's. On loopback, a stopped node's address stays on the machine. A network fault is an
// nftables rule on the node's loopback address and port (ctrBlackhole), never a network change.

// ctrSuiteLabel marks every container of the suite.
const ctrSuiteLabel = "org.cqlcontrol.suite"

// ctrRequest is the request of every container of the suite: the image and its arguments on the
// host's network, labelled as the suite's.
func ctrRequest(image string, cmd []string) testcontainers.ContainerRequest {
	return testcontainers.ContainerRequest{
		Image:  image,
		Cmd:    cmd,
		Labels: map[string]string{ctrSuiteLabel: "containers"},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = network.NetworkHost
		},
	}
}

// ctrStart is the only place the suite creates a container (TestContainerSuiteHostNetworkOnly
// holds it to that). It creates the container, checks that the engine put it on the host's
// network with no published port (failing the test, the container removed unstarted,
// otherwise), then starts it. The container is removed when the test ends.
func ctrStart(ctx context.Context, t *testing.T, req testcontainers.ContainerRequest, what string) testcontainers.Container {
	t.Helper()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req,
		Logger:           tclog.TestLogger(t),
	})
	testcontainers.CleanupContainer(t, c)
	require.NoError(t, err, "creating %s", what)
	info, err := c.Inspect(ctx)
	require.NoError(t, err, "inspecting %s", what)
	require.NoError(t, containers.HostNetworkOnly(info), "%s (container %s)", what, c.GetContainerID())
	require.NoError(t, c.Start(ctx), "starting %s", what)
	return c
}

// TestContainerSuiteHostNetworkOnly fails if any container of the suite could run with a
// network mode other than host: the suite's request has it, the check ctrStart applies to what
// the engine created rejects anything else, and no code of the package creates a container or
// a network other than through ctrStart. It needs no engine (ctrStart's check runs on every
// container the other tests start, where there is one).
func TestContainerSuiteHostNetworkOnly(t *testing.T) {
	req := ctrRequest("img", []string{"--flag"})
	require.Empty(t, req.Networks, "no network of the suite's")
	require.Empty(t, req.ExposedPorts, "no port exposed")
	require.Nil(t, req.EndpointSettingsModifier)
	require.NotNil(t, req.HostConfigModifier)
	var hc container.HostConfig
	req.HostConfigModifier(&hc)
	require.Equal(t, network.NetworkHost, string(hc.NetworkMode))
	require.Empty(t, hc.PortBindings)

	host := func(mut func(*container.InspectResponse)) error {
		info := &container.InspectResponse{HostConfig: &container.HostConfig{NetworkMode: network.NetworkHost},
			NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{network.NetworkHost: {}}}}
		mut(info)
		return containers.HostNetworkOnly(info)
	}
	require.NoError(t, host(func(*container.InspectResponse) {}))
	require.NoError(t, host(func(i *container.InspectResponse) { i.NetworkSettings.Networks = nil }))
	for name, mut := range map[string]func(*container.InspectResponse){
		"bridge":        func(i *container.InspectResponse) { i.HostConfig.NetworkMode = network.NetworkBridge },
		"default":       func(i *container.InspectResponse) { i.HostConfig.NetworkMode = network.NetworkDefault },
		"user network":  func(i *container.InspectResponse) { i.HostConfig.NetworkMode = "cql" },
		"container":     func(i *container.InspectResponse) { i.HostConfig.NetworkMode = "container:abc" },
		"podman joined": func(i *container.InspectResponse) { i.NetworkSettings.Networks["podman"] = &network.EndpointSettings{} },
		"published": func(i *container.InspectResponse) {
			i.HostConfig.PortBindings = network.PortMap{network.MustParsePort("9042/tcp"): {{HostPort: "0"}}}
		},
		"no host config": func(i *container.InspectResponse) { i.HostConfig = nil },
	} {
		require.Error(t, host(mut), "%s is refused", name)
	}

	// Only ctrStart creates containers; nothing creates, joins or leaves a network.
	// testcontainers' functions, and the methods (of a provider or a Docker client) of any name.
	tcCreates := regexp.MustCompile(`^(GenericContainer|Run|GenericNetwork)$`)
	creates := regexp.MustCompile(`^(RunContainer|CreateContainer|ReuseOrCreateContainer|ContainerCreate|NetworkCreate|NetworkConnect|NetworkDisconnect)$`)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			require.NotEqual(t, "github.com/testcontainers/testcontainers-go/network", path, "%s: networks of the suite's own", name)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || fn.Name.Name == "ctrStart" {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				if creates.MatchString(sel.Sel.Name) || (pkg != nil && pkg.Name == "testcontainers" && tcCreates.MatchString(sel.Sel.Name)) {
					t.Errorf("%s: %s calls %s: containers are created by ctrStart only, networks not at all", fset.Position(call.Pos()), fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

// ctrNftPrefix begins the name of every nftables table of the suite (then the process ID and a
// sequence number), so that a table a killed run left behind is recognized and removed.
const ctrNftPrefix = "cqlcontrol_ctr_"

// ctrBlackhole is an nftables table of the test's own (package blackhole): every packet to or
// from an address and port in it is dropped, as a partition drops it (the test's own clients and
// the nodes' probes of each other alike). The table is removed when the test ends, failed or not.
type ctrBlackhole struct{ table *blackhole.Table }

// ctrNewBlackhole creates the table (empty: nothing dropped), skipping the test without nft.
func ctrNewBlackhole(t *testing.T) *ctrBlackhole {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		ctrUnavailable(t, "nft not on PATH, network faults skipped (make containers installs nftables): %v", err)
	}
	table, err := blackhole.New(ctrNftPrefix)
	if err != nil {
		ctrUnavailable(t, "network faults skipped: %v", err)
	}
	t.Cleanup(func() {
		if err := table.Close(); err != nil {
			t.Error(err)
		}
	})
	return &ctrBlackhole{table: table}
}

// drop blackholes ip:port.
func (b *ctrBlackhole) drop(t *testing.T, ip, port string) {
	t.Helper()
	require.NoError(t, b.table.Drop(ip, port))
}

// heal lets ip:port through again.
func (b *ctrBlackhole) heal(t *testing.T, ip, port string) {
	t.Helper()
	require.NoError(t, b.table.Heal(ip, port))
}
