package controlconn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// A control connection beside a gocql session: created from the same ClusterConfig before the
// session (so the session's host events reach it), started, then read for changes. A
// subscriber that falls behind gets a Resync marker and starts again from a fresh snapshot.
// The cluster here is simulated on loopback; with a real one, only the addresses differ.
func Example() {
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 3, BaseIP: "127.0.6.1", StopAnnounceDelay: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sim.Close() }()

	cluster := gocql.NewCluster("127.0.6.1", "127.0.6.2", "127.0.6.3")
	cluster.Port = sim.Port()
	cluster.Logger = log.New(io.Discard, "", 0)

	cc, err := controlconn.New(cluster, controlconn.Cadence{}) // installs the host-event listener
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	session, err := cluster.CreateSession() // after New, so its host events reach cc
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cc.Start(ctx); err != nil { // first connection and metadata; recovery goes on after ctx
		log.Fatal(err)
	}

	sub, snap, err := cc.Subscribe(64) // topology/status/schema changes, nothing lost across reconnects
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	fmt.Println("hosts:", snap.Len())

	// Stop a node other than the control connection's: the others announce it down.
	var stopped *cqlsim.Node
	for _, n := range sim.Nodes() {
		if n.HostID() != cc.Status().Host.HostID {
			stopped = n
			break
		}
	}
	stopped.Stop()
	for c := range sub.C() {
		switch c.Kind {
		case metadata.Resync: // fell behind: start again from the current snapshot
			if snap, err = sub.Resync(); err != nil {
				log.Fatal(err)
			}
		case metadata.HostDown:
			fmt.Println(c.Kind, "of the stopped node:", c.Host.HostID() == stopped.HostID())
			return
		}
	}
	// Output:
	// hosts: 3
	// host_down of the stopped node: true
}

// An Observer sets the functions it wants; the others are not called. Errors are matched with
// errors.Is (the Err values) and errors.As (ConnError, DialError, ServerError), and Classify
// says how a failure is retried.
func ExampleObserver() {
	cluster := gocql.NewCluster("10.0.0.1", "10.0.0.2", "10.0.0.3")
	obs := controlconn.Observer{
		Connected: func(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
			log.Printf("control connection to %s (protocol v%d)", ep.Addr, v)
		},
		Lost: func(ep controlconn.Endpoint, err error, uptime time.Duration) {
			switch {
			case errors.Is(err, controlconn.ErrHeartbeat):
				log.Printf("%s stopped answering after %v", ep.Addr, uptime)
			case controlconn.Classify(err) == controlconn.ClassAuth:
				log.Printf("%s rejected our credentials: retried at most once per DelayCap", ep.Addr)
			default:
				log.Printf("lost %s: %v", ep.Addr, err)
			}
		},
	}
	cc, err := controlconn.New(cluster, controlconn.Cadence{StaggerDelay: time.Minute}, controlconn.WithObserver(obs))
	if errors.Is(err, controlconn.ErrInvalidConfig) {
		log.Println(err) // names the field: "... Cadence.StaggerDelay (1m0s) must be shorter than ConnectTimeout (5s) ..."
		return
	}
	defer func() { _ = cc.Close() }()

	_, err = cc.Query(context.Background(), "SELECT release_version FROM system.local")
	var se *controlconn.ServerError
	if errors.As(err, &se) {
		log.Printf("the server answered %v: %s", se.Code, se.Message)
	}
}

// One dial budget for a process with several ClusterConfigs (here two, for the same cluster):
// every ControlConnection and every session created from those configs after New dial
// through the one governor. Configuring a governor of its own beside the shared one is an
// error.
func ExampleWithSharedDialGovernor() {
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 3, BaseIP: "127.0.7.1"})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sim.Close() }()

	g, err := controlconn.NewDialGovernor(controlconn.Governor{})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		cluster := gocql.NewCluster("127.0.7.1", "127.0.7.2", "127.0.7.3")
		cluster.Port = sim.Port()
		cluster.Logger = log.New(io.Discard, "", 0)
		cc, err := controlconn.New(cluster, controlconn.Cadence{}, controlconn.WithSharedDialGovernor(g))
		if err != nil {
			log.Fatal(err)
		}
		defer func() { _ = cc.Close() }()
		session, err := cluster.CreateSession()
		if err != nil {
			log.Fatal(err)
		}
		defer session.Close()
		if err := cc.Start(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("both control connections dialled through it:", g.Stats().Passed >= 2)

	_, err = controlconn.New(gocql.NewCluster("127.0.7.1"), controlconn.Cadence{},
		controlconn.WithSharedDialGovernor(g), controlconn.WithDialGovernor(controlconn.Governor{}))
	fmt.Println("a governor of its own too:", errors.Is(err, controlconn.ErrInvalidConfig))
	// Output:
	// both control connections dialled through it: true
	// a governor of its own too: true
}
