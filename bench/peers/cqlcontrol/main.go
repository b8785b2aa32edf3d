// The cqlcontrol lane: gocql v1.7.0 with cqlcontrol's control connection plugged in as the
// README shows (controlconn.New before CreateSession, Start after), with the dial governor
// turned off (Governor{Off: true}; it is on by default), as the ungoverned lane. Queries
// are pinned as in the gocql lane.
package main

import (
	"context"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/bench/peers/golane"
	"github.com/cqlcontrol/cqlcontrol/controlconn"
)

func main() {
	hosts := golane.Hosts()
	cluster := gocql.NewCluster(hosts...)
	cluster.PoolConfig.HostSelectionPolicy = golane.NewPin(gocql.RoundRobinHostPolicy())
	cc, err := controlconn.New(cluster, controlconn.Cadence{}, controlconn.WithDialGovernor(controlconn.Governor{Off: true}))
	if err != nil {
		golane.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	session, err := cluster.CreateSession()
	if err != nil {
		golane.Fatal(err)
	}
	defer session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cc.Start(ctx); err != nil {
		golane.Fatal(err)
	}
	golane.Run(hosts, func(ctx context.Context, host string) error {
		return session.Query("SELECT release_version FROM system.local").WithContext(golane.OnHost(ctx, host)).Exec()
	})
}
