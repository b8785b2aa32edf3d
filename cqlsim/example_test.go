package cqlsim_test

import (
	"fmt"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// A three-node cluster on 127.0.0.1-3; kill a node and watch the others convict it.
func Example() {
	c, err := cqlsim.Start(cqlsim.Config{Nodes: 3, KillDetectDelay: 200 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close() }()
	// gocql: cluster := gocql.NewCluster(c.ContactPoints()...); cluster.Port = c.Port()
	c.Node(2).Kill()
	for _, e := range c.Events() {
		if e.Node == 2 && e.Kind == cqlsim.EventNodeKilled {
			fmt.Println(e.Kind, c.Node(2).IP())
		}
	}
	// Output: node_killed 127.0.0.3
}
