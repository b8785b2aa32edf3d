// Package adapter is what an adapter of a driver gives core.New, as controlconn.New does for
// gocql v1 and gocqlv2.New for gocql v2; applications do not use it. The adapter translates its
// driver's configuration into a Driver: the connection settings in driver-neutral types
// (Endpoint, Authenticator, Dialer, AddressTranslator, a tls.Config), and the hooks through
// which core.New has the adapter put the driver's host-event listener on its queue, govern the
// driver's dials with its dial governor (Gate) and check the driver's configuration at Start.
// What every adapter installs with the governor is written once here, with the driver's types
// as type parameters: Auth, AuthenticatorOf, DialHost, GovernedDialer, GovernedConviction,
// PlainDialer, HostCache.
//
// It depends on neither core nor any driver, so that core can take its types and an adapter
// can name them.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ.
//
//	AddrPort
//	AddressTranslator: Translate
//	Auth
//	Authenticator: Challenge Success
//	AuthenticatorOf: A Challenge Success
//	ConvictionPolicy: AddFailure Reset
//	DialHost
//	Dialer: DialContext
//	Driver: Accept AddressTranslator Auth CQLVersion Check ConnectTimeout CountsSessions DialHost
//		Dialer Hosts Install Keepalive Port ProtoVersion Retain TLS TakeGate WriteTimeout
//	DriverAuthenticator: Challenge Success
//	DriverDefaultConnectTimeout
//	Endpoint: Addr DC HostID Hostname String
//	ErrConfigChanged ErrGoverned
//	Gate: Admit Done PoolEmpty SetReconnectInterval SetupDone
//	GovernedConnectTimeout
//	GovernedConviction: AddFailure Inner Refused Reset
//	GovernedDialer: DialHost Gate Inner
//	GovernedReconnectInterval
//	Host: ConnectAddress ConnectAddressAndPort HostnameAndPort Port
//	HostAddr
//	HostCache: Get Len Put Retain
//	HostDialer: DialHost
//	HostFilter NetDialer
//	PlainDialer: DialHost Dialer TLS Wrap
//	PoolEmptyAt ReconnectInterval SetupBusy TLSConfig
//	TLSOptions: CaPath CertPath Config EnableHostVerification KeyPath
package adapter
