package core

import (
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
)

// newGocql is controlconn.New (which this package's tests cannot import: it imports core):
// the gocql v1 adapter's Driver, then New.
func newGocql(cfg *gocql.ClusterConfig, cadence Cadence, opts ...Option) (*ControlConnection, error) {
	d, _, err := gocqlv1.NewDriver(cfg)
	if err != nil {
		return nil, err
	}
	return New(d, cadence, opts...)
}

// newForDriver is New for a driver whose connection settings are c's, with d's hooks.
func newForDriver(c config, d adapter.Driver, opts ...Option) (*ControlConnection, error) {
	d.Hosts, d.Port, d.AddressTranslator = c.ContactPoints, c.Port, c.AddressTranslator
	d.ProtoVersion, d.CQLVersion = c.Conn.ProtoVersion, c.Conn.CQLVersion
	d.Auth, d.DialHost, d.Dialer, d.TLS = c.Conn.Auth, c.Conn.DialHost, c.Conn.Dialer, c.Conn.TLS
	d.Keepalive, d.WriteTimeout = c.Conn.Keepalive, c.Conn.WriteTimeout
	return New(d, c.Cadence, opts...)
}
