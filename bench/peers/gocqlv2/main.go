// The gocql v2 lane: Apache gocql v2.1.2 alone, with its defaults; a query is pinned to a host
// with v2's Query.SetHostID.
package main

import (
	"context"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/bench/peers/golane"
)

func main() {
	hosts := golane.Hosts()
	session, err := gocql.NewCluster(hosts...).CreateSession()
	if err != nil {
		golane.Fatal(err)
	}
	defer session.Close()
	ids := map[string]string{}
	for _, h := range session.GetHosts() {
		ids[h.ConnectAddress().String()] = h.HostID()
	}
	golane.Run(hosts, func(ctx context.Context, host string) error {
		return session.Query("SELECT release_version FROM system.local").SetHostID(ids[host]).ExecContext(ctx)
	})
}
