package containers_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/cqlcontrol/cqlcontrol/realcluster/containers"
)

// A full-cluster restart of three Cassandra containers under a gocql session. In a test,
// containers.StartT(t, cfg) does the Start, the Close and the skip where there is no engine.
func Example() {
	ctx := context.Background()
	c, err := containers.Start(ctx, containers.Config{
		Config:   realcluster.Config{Nodes: 3, BaseIP: "127.0.0.151"},
		JREImage: "eclipse-temurin:17-jre", // any Java 17 runtime image with java on PATH
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Close() }()

	session, err := gocql.NewCluster(c.Hosts()...).CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	// docker stop of every node, 10 s down, docker start of every node; it returns once all
	// answer CQL again.
	down, err := realcluster.FullRestart(ctx, c, 10*time.Second, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first node back after", realcluster.FirstReady(c, down).Sub(down))
	if err := session.Query("SELECT release_version FROM system.local").Exec(); err != nil {
		log.Fatal(err)
	}
}
