// Package gocqlv2 plugs cqlcontrol's control connection into Apache gocql v2
// (github.com/apache/cassandra-gocql-driver/v2), as controlconn.New does for gocql v1.7.0. It is a
// module of its own, so that users of gocql v1 never download v2, and it builds on the
// driver-neutral core (package core) alone, so that a gocql v2 program compiles no package of
// gocql v1.
package gocqlv2

import (
	"errors"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// maxProtoVersion is the greatest native protocol version the control connection speaks.
const maxProtoVersion = 4

// New builds a ControlConnection from the gocql v2 configuration the application already has and
// installs the host-event listener on it, so that the sessions created from cluster afterwards
// feed recovery with evidence:
//
//	cluster := gocql.NewCluster("10.0.0.1", "10.0.0.2")
//	cc, err := gocqlv2.New(cluster, core.Cadence{})
//	if err != nil { ... }
//	defer cc.Close()
//	session, err := cluster.CreateSession() // after New: the listener is in cluster now
//	if err := cc.Start(ctx); err != nil { ... }
//
// From cluster it takes Hosts, Port, AddressTranslator, ProtoVersion (5 and above pin v4, the
// greatest version the control connection speaks), CQLVersion, AuthProvider (else
// Authenticator), HostDialer (else Dialer, SslOpts and SocketKeepalive), ConnectTimeout (when
// the cadence has none) and WriteTimeout (else Timeout), with gocql v2's rules. New also sets cluster.ConnectObserver to one
// that calls the observer already there first, and keeps the HostInfo gocql v2 built for each
// address it connected to: the user's HostDialer and AuthProvider get gocql v2's own HostInfo
// (hostname, host ID) for our dials too, as for its own, once a session has connected there. The listener goes into
// cluster.Metadata.HostListener, next to any listener already there (a gocql.HostListenersMux
// calls the user's first). The queue and the options are core.New's: a queue is created
// (core.WithQueueConfig) and closed by Close.
//
// With core.WithDialGovernor it also governs every dial of the sessions created from
// cluster afterwards, as controlconn.New does for gocql v1 (see core.Governor): it sets
// cluster.HostDialer to a governed dialer wrapping what was configured, with gocql v2.1.2's own
// semantics (the HostDialer if set; else the Dialer, or a net.Dialer with ConnectTimeout and
// SocketKeepalive; with TLS per SslOpts), shares one budget between those dials and the control
// connection's own, wraps cluster.ConvictionPolicy so that a refused dial never convicts a host,
// and, if cluster.ReconnectInterval is gocql v2's default (60 s), sets it to
// 100 ms (after Close, a down host gets one real dial per the
// interval the user configured), and wraps cluster.Logger, if set, so that a refused dial logs
// one line (gocql v2's Debug one), not two. core.WithSharedDialGovernor works the same way. A governed dial that connects while the control
// connection is down re-arms it at once. Refused dials fail at once with an error wrapping
// core.ErrGoverned and send nothing.
//
// So set these fields before New, and create the sessions from cluster itself after it: the
// first Start checks that cluster still holds what New installed (the listener in
// Metadata.HostListener, ConnectObserver and, governed, HostDialer, ConvictionPolicy, Logger,
// ReconnectInterval) and, for each of them replaced since, logs a warning naming the field and
// what it costs, kept in Status.ConfigChanged (wrapping core.ErrConfigChanged). A copy of
// cluster made before New holds none of it, and changes to a copy made after New are not checked.
func New(cluster *gocql.ClusterConfig, cadence core.Cadence, opts ...core.Option) (*core.ControlConnection, error) {
	if cluster == nil {
		return nil, errors.New("gocqlv2: nil gocql.ClusterConfig")
	}
	hosts := &hostInfos{next: cluster.ConnectObserver}
	d, err := translate(cluster, hosts)
	if err != nil {
		return nil, err
	}
	inner := v2HostDialer(cluster, d.TLS) // what the governed dialer wraps, when governed
	inst := &installed{cluster: cluster, observer: hosts}
	var gate adapter.Gate
	d.Install = func(q *hostevents.Queue) { Install(cluster, q); inst.queue = q }
	d.TakeGate = func(g adapter.Gate) { gate = g }
	d.Check = inst.check
	d.Retain = hosts.Retain // the HostInfos of addresses the cluster no longer has are forgotten
	cc, err := core.New(d, cadence, opts...)
	if err != nil {
		return nil, err
	}
	cluster.ConnectObserver = hosts
	if gate != nil {
		setInterval := cluster.ReconnectInterval == v2DefaultReconnectInterval
		governV2(cluster, gate, inner)
		inst.governed(cluster, setInterval)
	}
	return cc, nil
}

// translate turns the connection settings of a gocql v2 ClusterConfig into the adapter.Driver
// core.New takes them from, following gocql v2's own rules. It does not modify cluster. The
// host dialer and authenticators take gocql v2's own HostInfos from hosts (may be nil).
//
//   - Hosts and Port; AddressTranslator; HostFilter (the hosts the control connection dials).
//   - ProtoVersion: 0 negotiates (v4 first); 3 and 4 are used as they are; 5 and above pin v4, the
//     greatest version the control connection speaks (a v5 server speaks v4 too).
//   - CQLVersion.
//   - AuthProvider, else Authenticator (gocql v2 uses AuthProvider when both are set).
//   - HostDialer; without it, Dialer and SslOpts (gocql v2's TLS rules, the same table as v1's:
//     adapter.TLSConfig) and SocketKeepalive.
//   - ConnectTimeout, used when the cadence's ConnectTimeout is zero; WriteTimeout, else Timeout,
//     bounds one frame write, as gocql v2 does.
func translate(cluster *gocql.ClusterConfig, hosts *hostInfos) (adapter.Driver, error) {
	d := adapter.Driver{
		Hosts:          append([]string(nil), cluster.Hosts...),
		Port:           cluster.Port,
		ProtoVersion:   min(cluster.ProtoVersion, maxProtoVersion),
		CQLVersion:     cluster.CQLVersion,
		ConnectTimeout: cluster.ConnectTimeout,
		Auth:           authFor(cluster, hosts),
	}
	if cluster.HostFilter != nil {
		d.Accept = adapter.HostFilter(cluster.HostFilter.Accept, hosts.hostInfo)
	}
	if cluster.AddressTranslator != nil {
		d.AddressTranslator = cluster.AddressTranslator
	}
	if cluster.HostDialer != nil {
		d.DialHost = dialHost(cluster.HostDialer, hosts)
	} else {
		if cluster.Dialer != nil {
			d.Dialer = cluster.Dialer
		}
		if cluster.SocketKeepalive > 0 {
			d.Keepalive = cluster.SocketKeepalive
		}
		if o := cluster.SslOpts; o != nil {
			tc, err := adapter.TLSConfig(adapter.TLSOptions{Config: o.Config, CertPath: o.CertPath, KeyPath: o.KeyPath,
				CaPath: o.CaPath, EnableHostVerification: o.EnableHostVerification})
			if err != nil {
				return adapter.Driver{}, err
			}
			d.TLS = tc // our own dials use it, and the governed dialer a clone: the files are read once
		}
	}
	switch {
	case cluster.WriteTimeout > 0:
		d.WriteTimeout = cluster.WriteTimeout
	case cluster.Timeout > 0:
		d.WriteTimeout = cluster.Timeout
	}
	return d, nil
}
