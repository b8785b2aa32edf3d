// The cqlcontrol governed v2 lane: Apache gocql v2.1.2 with cqlcontrol's control connection and
// its dial governor with its defaults (gocqlv2.New before CreateSession, Start after, as the
// README shows); a query is pinned to a host with v2's Query.SetHostID.
package main

import (
	"context"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/bench/peers/golane"
	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2"
)

func main() {
	hosts := golane.Hosts()
	cluster := gocql.NewCluster(hosts...)
	cc, err := gocqlv2.New(cluster, controlconn.Cadence{}, controlconn.WithDialGovernor(controlconn.Governor{}))
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
	ids := map[string]string{}
	for _, h := range session.GetHosts() {
		ids[h.ConnectAddress().String()] = h.HostID()
	}
	golane.Run(hosts, func(ctx context.Context, host string) error {
		return session.Query("SELECT release_version FROM system.local").SetHostID(ids[host]).ExecContext(ctx)
	})
}
