package core

import (
	"errors"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"

	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// Every function of an Observer is called by the method of the same name, with the same
// arguments, and a zero Observer ignores everything.
func TestObserverCallsEachFunctionSet(t *testing.T) {
	var got []string
	note := func(s string) { got = append(got, s) }
	errX := errors.New("x")
	ep := Endpoint{Addr: "10.0.0.1:9042"}
	o := observerOf(&Observer{
		DialStarted:  func(e Endpoint) { assert.Equal(t, ep, e); note("DialStarted") },
		DialFinished: func(_ Endpoint, err error, d time.Duration) { assert.Equal(t, errX, err); note("DialFinished") },
		Connected: func(_ Endpoint, v primitive.ProtocolVersion) {
			assert.Equal(t, primitive.ProtocolVersion4, v)
			note("Connected")
		},
		Lost: func(_ Endpoint, err error, d time.Duration) { assert.Equal(t, time.Second, d); note("Lost") },
		Heartbeat: func(_ Endpoint, rtt time.Duration, _ error) {
			assert.Equal(t, time.Millisecond, rtt)
			note("Heartbeat")
		},
		Refreshed:        func(_ time.Duration, n int, _ error) { assert.Equal(t, 3, n); note("Refreshed") },
		ServerEvent:      func(k, c string) { assert.Equal(t, "status_change/UP", k+"/"+c); note("ServerEvent") },
		PeersSkipped:     func(s []metadata.SkippedPeer) { assert.Len(t, s, 1); note("PeersSkipped") },
		ReplyDropped:     func(Endpoint) { note("ReplyDropped") },
		DataPathLag:      func(_ Endpoint, lag time.Duration) { assert.Equal(t, 2*time.Second, lag); note("DataPathLag") },
		GovernorDecided:  func(v string) { assert.Equal(t, "pass", v); note("GovernorDecided") },
		GovernorInterval: func(d time.Duration) { assert.Equal(t, time.Second, d); note("GovernorInterval") },
	})
	calls := func(o *funcObserver) {
		o.DialStarted(ep)
		o.DialFinished(ep, errX, time.Second)
		o.Connected(ep, primitive.ProtocolVersion4)
		o.Lost(ep, errX, time.Second)
		o.Heartbeat(ep, time.Millisecond, nil)
		o.Refreshed(time.Second, 3, nil)
		o.ServerEvent("status_change", "UP")
		o.PeersSkipped([]metadata.SkippedPeer{{Row: 1}})
		o.ReplyDropped(ep)
		o.DataPathLag(ep, 2*time.Second)
		o.GovernorDecided("pass")
		o.GovernorInterval(time.Second)
	}
	calls(o)
	assert.Equal(t, []string{"DialStarted", "DialFinished", "Connected", "Lost", "Heartbeat", "Refreshed",
		"ServerEvent", "PeersSkipped", "ReplyDropped", "DataPathLag", "GovernorDecided", "GovernorInterval"}, got)

	got = nil
	calls(observerOf(nil))
	calls(observerOf(&Observer{}))
	assert.Empty(t, got)
	assert.Nil(t, governorObserver(observerOf(&Observer{Connected: func(Endpoint, primitive.ProtocolVersion) {}})),
		"an Observer without the governor's functions is not called by the governor")
	assert.NotNil(t, governorObserver(newSessionCheck(o, nil, nil).obs), "seen through New's session check")
}
