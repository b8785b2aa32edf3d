package controlconn_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"time"

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
