package core

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// New builds a ControlConnection for a driver whose configuration an adapter translated into d
// (controlconn.New does it for gocql v1, gocqlv2.New for gocql v2; applications call those).
// It validates d's connection settings with the cadence and the options, builds a host-event
// queue (WithQueueConfig configures it, Close closes it) unless one is given, and calls d's
// hooks: Install with the queue, once the ControlConnection is built; TakeGate with the dial
// governor (on by default: see Governor), before it returns. On error it calls none of them,
// so the driver's configuration is left alone.
func New(d adapter.Driver, cadence Cadence, opts ...Option) (*ControlConnection, error) {
	o := parseOptions(opts)
	c := config{
		ContactPoints:     append([]string(nil), d.Hosts...),
		Port:              d.Port,
		AddressTranslator: d.AddressTranslator,
		Cadence:           cadence,
		Accept:            d.Accept,
		Conn: cqlconn.ConnConfig{
			ProtoVersion: d.ProtoVersion,
			CQLVersion:   d.CQLVersion,
			Auth:         d.Auth,
			DialHost:     d.DialHost,
			Dialer:       d.Dialer,
			Keepalive:    d.Keepalive,
			WriteTimeout: d.WriteTimeout,
		},
	}
	if d.DialHost == nil {
		c.Conn.TLS = d.TLS
	}
	if c.Cadence.ConnectTimeout == 0 && d.ConnectTimeout > 0 {
		c.Cadence.ConnectTimeout = d.ConnectTimeout
	}
	if o.bare {
		return build(c, o) // ccopt.Bare: no hook is called
	}
	o.configCheck = d.Check
	gov, err := adapterGovernor(&c, &o, d.TakeGate != nil)
	if err != nil {
		return nil, err
	}
	o.governed = gov != nil
	if o.queue == nil {
		var qc hostevents.QueueConfig
		if o.queueConfig != nil {
			qc = *o.queueConfig
		}
		q, err := hostevents.NewQueue(qc)
		if err != nil {
			return nil, fmt.Errorf("controlconn: host event queue: %w", err)
		}
		o.queue, o.queueOwned = q, true
	}
	if d.CountsSessions {
		// The ControlConnection calls the session check's observer, around the one the caller
		// passed.
		o.inner = newSessionCheck(observerOf(o.observer), o.queue, o.logger).obs
	}
	cc, err := build(c, o)
	if err != nil {
		if o.queueOwned {
			_ = o.queue.Close()
		}
		return nil, err
	}
	cc.ownQueue = o.queueOwned
	cc.retain = d.Retain
	if d.Install != nil {
		d.Install(o.queue)
	}
	if gov != nil {
		cc.attachGovernor(gov)
		d.TakeGate(&driverGate{g: gov})
	}
	return cc, nil
}

// sessionCheck is New's check of the order of things, for a driver whose listener counts its
// sessions (adapter.Driver.CountsSessions). Through the observer New installs around the
// caller's (obs), at the first connection it warns, once, when no session has initialised the
// listener the adapter installed, which is what calling New after CreateSession looks like
// (gocql v1 copies the configuration into the session, so the wrapped policy never reaches it).
type sessionCheck struct {
	obs   *funcObserver // the caller's functions, with Connected also running connected
	queue *hostevents.Queue
	log   *slog.Logger
	once  sync.Once
}

// errSessionFirst is the warning's text.
const errSessionFirst = "controlconn: no gocql session has been created from this ClusterConfig since controlconn.New; " +
	"a session created before New never reports its host events, so recovery follows the blind schedule only: call New before CreateSession"

// newSessionCheck returns New's session check around inner (nil: an observer of nothing).
func newSessionCheck(inner *funcObserver, q *hostevents.Queue, log *slog.Logger) *sessionCheck {
	if inner == nil {
		inner = observerOf(nil)
	}
	if log == nil {
		log = discardLogger
	}
	s := &sessionCheck{queue: q, log: log}
	o := inner.o // every other function is the caller's, as it is
	callers := o.Connected
	o.Connected = func(ep Endpoint, v primitive.ProtocolVersion) {
		if callers != nil {
			callers(ep, v)
		}
		s.connected()
	}
	s.obs = &funcObserver{o: o}
	return s
}

// connected is the check at each connection, after the caller's Observer.Connected: the
// warning, at the first one, if no session has initialised New's listener.
func (s *sessionCheck) connected() {
	s.once.Do(func() {
		if s.queue.Sessions() == 0 {
			s.log.Warn(errSessionFirst)
		}
	})
}
