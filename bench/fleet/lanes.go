package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	gocql2 "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2"
)

// client is one member of the fleet: one application's driver, as the lane builds it.
type client interface {
	Query(ctx context.Context) error
	Close()
}

// target is what every client is given: the fleet's nodes (fleetHosts: its contact points, and
// the only hosts it uses),
// the fleet's credentials, and the worker that counts its connection setups.
type target struct {
	hosts          []string
	port           int
	user, password string
	w              *worker
	tr             *trace // this client's own trace (the report's line if it is left unserved)
}

// v1 is a gocql v1 ClusterConfig for the target, with its defaults otherwise.
func (t target) v1() *gocql.ClusterConfig {
	cfg := gocql.NewCluster(t.hosts...)
	cfg.HostFilter = gocql.WhiteListHostFilter(t.hosts...) // only the fleet's nodes (fleetHosts)
	cfg.Port = t.port
	cfg.Authenticator = gocql.PasswordAuthenticator{Username: t.user, Password: t.password}
	cfg.ConnectObserver = v1Observer{t.w, t.tr}
	return cfg
}

// v2 is an Apache gocql v2 ClusterConfig for the target, with its defaults otherwise.
func (t target) v2() *gocql2.ClusterConfig {
	cfg := gocql2.NewCluster(t.hosts...)
	cfg.HostFilter = gocql2.WhiteListHostFilter(t.hosts...) // only the fleet's nodes (fleetHosts)
	cfg.Port = t.port
	cfg.Authenticator = gocql2.PasswordAuthenticator{Username: t.user, Password: t.password}
	cfg.ConnectObserver = v2Observer{t.w, t.tr}
	return cfg
}

// observer counts the dials of cqlcontrol's own control connection, and traces them and the
// governor's decisions for the client.
func (t target) observer() controlconn.Option {
	return controlconn.WithObserver(controlconn.Observer{
		DialFinished: func(_ controlconn.Endpoint, err error, _ time.Duration) {
			t.w.setupEnded(time.Now(), err)
			t.tr.setupErr("ours", err)
		},
		Connected:       func(ep controlconn.Endpoint, _ primitive.ProtocolVersion) { t.tr.conn("up", ep) },
		Lost:            func(ep controlconn.Endpoint, _ error, _ time.Duration) { t.tr.conn("lost", ep) },
		GovernorDecided: t.tr.verdict,
		GovernorSetup: func(outcome string, took time.Duration) {
			t.tr.setup("gov", fmt.Sprintf("%s %.1fs", outcome, took.Seconds()))
		},
	})
}

// lane builds one client (nil for the java lane, whose clients live in a JVM). Each lane is
// one small function: a new lane (an admission controller, say) is one more entry in lanes.
type lane func(ctx context.Context, t target) (client, error)

// lanes are the lanes by name, in the order a run takes them, with how many logged-in
// connections a fully connected client holds on one node: the driver's control connection and
// its pool (NumConns, 2 by default in both gocql), and cqlcontrol's own.
var lanes = []struct {
	name  string
	new   lane
	conns int
}{
	{"gocql", gocqlAlone, 3},
	{"cqlcontrol", cqlcontrolUngoverned, 4},
	{"cqlcontrol-governed", cqlcontrolGoverned, 4},
	{"gocqlv2", gocqlV2Alone, 3},
	{"cqlcontrol-governed-v2", cqlcontrolGovernedV2, 4},
	// The Java driver 4 (java.go): its control connection and one pool connection per node.
	{javaLane, nil, 2},
}

// defaultLanes are the lanes make fleet takes.
var defaultLanes = []string{"gocql", "cqlcontrol", "cqlcontrol-governed"}

func laneByName(name string) (lane, error) {
	for _, l := range lanes {
		if l.name == name {
			return l.new, nil
		}
	}
	return nil, fmt.Errorf("no lane %q (have %s)", name, strings.Join(laneNames(), ", "))
}

func laneNames() []string {
	var out []string
	for _, l := range lanes {
		out = append(out, l.name)
	}
	return out
}

func laneConns(name string) int {
	for _, l := range lanes {
		if l.name == name {
			return l.conns
		}
	}
	return 0
}

// gocqlAlone: gocql v1.7.0 with its defaults.
func gocqlAlone(_ context.Context, t target) (client, error) {
	s, err := t.v1().CreateSession()
	if err != nil {
		return nil, err
	}
	return v1Client{s: s}, nil
}

// gocqlV2Alone: Apache gocql v2.1.2 with its defaults.
func gocqlV2Alone(_ context.Context, t target) (client, error) {
	s, err := t.v2().CreateSession()
	if err != nil {
		return nil, err
	}
	return v2Client{s: s}, nil
}

// cqlcontrolUngoverned: gocql with cqlcontrol's control connection, no dial governor.
func cqlcontrolUngoverned(ctx context.Context, t target) (client, error) {
	return withControlConn(ctx, t.v1(), t.observer(), controlconn.WithDialGovernor(controlconn.Governor{Off: true})) // governed is the default
}

// cqlcontrolGoverned: as cqlcontrolUngoverned, with the dial governor at its defaults, one
// governor per client (each client is its own application process).
func cqlcontrolGoverned(ctx context.Context, t target) (client, error) {
	return withControlConn(ctx, t.v1(), t.observer(), controlconn.WithDialGovernor(controlconn.Governor{}))
}

// cqlcontrolGovernedV2: the governed lane on Apache gocql v2 (the gocqlv2 module).
func cqlcontrolGovernedV2(ctx context.Context, t target) (client, error) {
	cfg := t.v2()
	cc, err := gocqlv2.New(cfg, controlconn.Cadence{}, t.observer(), controlconn.WithDialGovernor(controlconn.Governor{}))
	if err != nil {
		return nil, err
	}
	s, err := cfg.CreateSession()
	if err != nil {
		_ = cc.Close()
		return nil, err
	}
	if err := start(ctx, cc.Start); err != nil {
		s.Close()
		_ = cc.Close()
		return nil, err
	}
	return v2Client{s: s, close: func() { _ = cc.Close() }}, nil
}

// withControlConn is the README's wiring: New before CreateSession, Start after.
func withControlConn(ctx context.Context, cfg *gocql.ClusterConfig, opts ...controlconn.Option) (client, error) {
	cc, err := controlconn.New(cfg, controlconn.Cadence{}, opts...)
	if err != nil {
		return nil, err
	}
	s, err := cfg.CreateSession()
	if err != nil {
		_ = cc.Close()
		return nil, err
	}
	if err := start(ctx, cc.Start); err != nil {
		s.Close()
		_ = cc.Close()
		return nil, err
	}
	return v1Client{s: s, close: func() { _ = cc.Close() }}, nil
}

func start(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return f(ctx)
}

const query = "SELECT release_version FROM system.local"

type v1Client struct {
	s     *gocql.Session
	close func()
}

func (c v1Client) Query(ctx context.Context) error { return c.s.Query(query).WithContext(ctx).Exec() }

func (c v1Client) Close() {
	c.s.Close()
	if c.close != nil {
		c.close()
	}
}

type v2Client struct {
	s     *gocql2.Session
	close func()
}

func (c v2Client) Query(ctx context.Context) error { return c.s.Query(query).ExecContext(ctx) }

func (c v2Client) Close() {
	c.s.Close()
	if c.close != nil {
		c.close()
	}
}

// v2Observer is the worker as v2's ConnectObserver.
// v1Observer and v2Observer count the driver's setups (the worker's) and trace the client's.
type v1Observer struct {
	w  *worker
	tr *trace
}

func (o v1Observer) ObserveConnect(c gocql.ObservedConnect) {
	o.w.setupEnded(c.End, c.Err)
	o.tr.setupErr("driver", c.Err)
}

type v2Observer struct {
	w  *worker
	tr *trace
}

func (o v2Observer) ObserveConnect(c gocql2.ObservedConnect) {
	o.w.setupEnded(c.End, c.Err)
	o.tr.setupErr("driver", c.Err)
}
