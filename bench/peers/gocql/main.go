// The gocql lane: gocql v1.7.0 alone, with its defaults. A query is pinned to a host by a
// load-balancing policy (golane.Pin around gocql's default round robin): v1.7.0 has no
// Query.SetHostID.
package main

import (
	"context"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/bench/peers/golane"
)

func main() {
	hosts := golane.Hosts()
	cluster := gocql.NewCluster(hosts...)
	cluster.PoolConfig.HostSelectionPolicy = golane.NewPin(gocql.RoundRobinHostPolicy())
	session, err := cluster.CreateSession()
	if err != nil {
		golane.Fatal(err)
	}
	defer session.Close()
	golane.Run(hosts, func(ctx context.Context, host string) error {
		return session.Query("SELECT release_version FROM system.local").WithContext(golane.OnHost(ctx, host)).Exec()
	})
}
