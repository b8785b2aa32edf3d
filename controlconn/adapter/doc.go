// Package adapter is what an adapter of another driver gives controlconn.New, as gocqlv2.New
// does for gocql v2; applications do not use it. The adapter translates its driver's
// configuration into a gocql v1 ClusterConfig of its own and passes controlconn.WithDriver with
// a Driver: New then takes the connection settings from that config and installs nothing on
// it, and the Driver's functions put the driver's host-event listener on New's queue, govern
// the driver's dials with New's dial governor (Gate) and check the driver's configuration at
// Start.
//
// It depends on neither controlconn nor the adapter's driver, so that controlconn can take its
// types and the adapter can name them.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ.
//
//	AddrPort
//	Driver: Check Install TLS TakeGate WriteTimeout
//	DriverDefaultConnectTimeout
//	Gate: Admit Done SetReconnectInterval SetupDone
//	GovernedConnectTimeout GovernedReconnectInterval NetDialer ReconnectInterval SetupBusy
//	TLSConfig
//	TLSOptions: CaPath CertPath Config EnableHostVerification KeyPath
package adapter
