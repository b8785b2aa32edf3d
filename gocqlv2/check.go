package gocqlv2

import (
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// installed is what New installed on a gocql v2 ClusterConfig, for the check the first Start
// makes (adapter.Driver.Check); nil and zero for what it did not install.
type installed struct {
	cluster    *gocql.ClusterConfig
	queue      *hostevents.Queue      // the listener's (Install)
	observer   *hostInfos             // the ConnectObserver
	dialer     gocql.HostDialer       // the governed dialer
	conviction gocql.ConvictionPolicy // the governed conviction policy
	logger     bool                   // Logger wrapped (refusalLogger)
	interval   time.Duration          // the ReconnectInterval New set
}

// governed records what governV2 installed; setInterval: it set ReconnectInterval.
func (in *installed) governed(cluster *gocql.ClusterConfig, setInterval bool) {
	in.dialer, in.conviction = cluster.HostDialer, cluster.ConvictionPolicy
	_, in.logger = cluster.Logger.(refusalLogger)
	if setInterval {
		in.interval = cluster.ReconnectInterval
	}
}

// check returns one error, wrapping adapter.ErrConfigChanged, for each field replaced on the
// ClusterConfig since New (errors.Join), nil if none. The listener counts as there while either
// of Metadata.HostListener's fields still feeds the queue, in a mux of the user's too (a mux
// holds slices: it is looked into, not compared); the other values New installed are pointers.
func (in *installed) check() error {
	c := in.cluster
	var errs []error
	hl := c.Metadata.HostListener
	if in.queue != nil && !feeds(hl.HostStateChangeListener, in.queue) {
		errs = append(errs, fmt.Errorf("%w: Metadata.HostListener.HostStateChangeListener no longer holds the listener New installed: "+
			"sessions created from it do not report hosts up or down to the control connection, whose recovery follows the blind schedule only; "+
			"set your listener before New, which keeps it and calls it first", adapter.ErrConfigChanged))
	}
	if in.queue != nil && !feeds(hl.TopologyChangeListener, in.queue) {
		errs = append(errs, fmt.Errorf("%w: Metadata.HostListener.TopologyChangeListener no longer holds the listener New installed: "+
			"sessions created from it do not report hosts added or removed to the control connection; "+
			"set your listener before New, which keeps it and calls it first", adapter.ErrConfigChanged))
	}
	if in.observer != nil && c.ConnectObserver != gocql.ConnectObserver(in.observer) {
		errs = append(errs, fmt.Errorf("%w: ConnectObserver is no longer the one New installed: "+
			"the control connection's dials no longer get gocql v2's own HostInfo (hostname, host ID) in HostDialer and AuthProvider; "+
			"set the observer before New, which calls it first", adapter.ErrConfigChanged))
	}
	if in.dialer != nil && c.HostDialer != in.dialer {
		errs = append(errs, fmt.Errorf("%w: HostDialer is no longer the governed dialer New installed: "+
			"the dials of sessions created from it are not governed (no budget while the cluster is down, no evidence re-arming the control connection); "+
			"set the HostDialer before New, which wraps it", adapter.ErrConfigChanged))
	}
	if in.conviction != nil && c.ConvictionPolicy != in.conviction {
		errs = append(errs, fmt.Errorf("%w: ConvictionPolicy is no longer the wrapper New installed: "+
			"a dial the governor refuses convicts the host (gocql v2 marks it down); set the policy before New, which wraps it", adapter.ErrConfigChanged))
	}
	if in.logger {
		if _, ok := c.Logger.(refusalLogger); !ok {
			errs = append(errs, fmt.Errorf("%w: Logger is no longer the wrapper New installed: "+
				"a dial the governor refuses logs twice (a Warning as well as the Debug line); set the logger before New, which wraps it", adapter.ErrConfigChanged))
		}
	}
	if in.interval != 0 && c.ReconnectInterval != in.interval {
		errs = append(errs, fmt.Errorf("%w: ReconnectInterval is %v, not the %v New set for the governor: "+
			"gocql v2 retries a down host's pool only every %v, so the data path can come back that long after the cluster; "+
			"set it before New (New changes only gocql v2's default, 60s)", adapter.ErrConfigChanged, c.ReconnectInterval, in.interval, c.ReconnectInterval))
	}
	return errors.Join(errs...)
}
