package cqlsim

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// announcement is one change the fake sink received, at virtual time since the test began.
type announcement struct {
	at     time.Duration
	about  int
	change Change
}

type fakeSink struct {
	start time.Time
	mu    sync.Mutex
	got   []announcement
}

func (s *fakeSink) announce(about int, change Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, announcement{time.Since(s.start), about, change})
}

func (s *fakeSink) all() []announcement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]announcement(nil), s.got...)
}

// defaultDelays are the real-cluster defaults: UP 1 s after the port opens, DOWN 500 ms after a graceful
// stop, 10 s after a kill.
var defaultDelays = gossipDelays{up: DefaultGossipDelay, stop: DefaultStopAnnounceDelay, failure: DefaultKillDetectDelay}

func newTestGossip(nodes int) (*gossip, *fakeSink) {
	sink := &fakeSink{start: time.Now()}
	g := newGossip(defaultDelays, sink)
	for i := 0; i < nodes; i++ {
		g.seed(i)
	}
	return g, sink
}

// at sleeps until virtual time d since the sink's start and lets timers fire.
func at(s *fakeSink, d time.Duration) {
	time.Sleep(d - time.Since(s.start))
	synctest.Wait()
}

func TestGossipKillIsAnnouncedAfterTheFailureDetector(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g, sink := newTestGossip(3)
		defer g.close()
		g.failed(1)
		at(sink, 9999*time.Millisecond)
		assert.Empty(t, sink.all(), "no DOWN at 9.999 s")
		at(sink, 10*time.Second)
		assert.Equal(t, []announcement{{10 * time.Second, 1, ChangeDown}}, sink.all())
		assert.False(t, g.view()[1].alive)
	})
}

func TestGossipGracefulStopAndStart(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g, sink := newTestGossip(2)
		defer g.close()
		g.stopped(0)
		at(sink, 499*time.Millisecond)
		assert.Empty(t, sink.all(), "no DOWN at 499 ms")
		at(sink, 500*time.Millisecond)
		g.restarted(0) // already believed down: nothing new
		at(sink, 2*time.Second)
		g.portOpened(0)
		at(sink, 2999*time.Millisecond)
		assert.Len(t, sink.all(), 1, "no UP until 1 s after the port opens")
		at(sink, 3*time.Second)
		assert.Equal(t, []announcement{
			{500 * time.Millisecond, 0, ChangeDown},
			{3 * time.Second, 0, ChangeUp},
		}, sink.all())
	})
}

func TestGossipRestartBeforeConvictionIsDownThenUp(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g, sink := newTestGossip(2)
		defer g.close()
		g.failed(1)
		at(sink, 3*time.Second)
		g.restarted(1) // new generation: the others mark it dead at once
		g.portOpened(1)
		at(sink, 20*time.Second)
		assert.Equal(t, []announcement{
			{3 * time.Second, 1, ChangeDown},
			{4 * time.Second, 1, ChangeUp},
		}, sink.all(), "the pending conviction at 10 s is void")
	})
}

func TestGossipBlackholeHealedBeforeConvictionIsSilent(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g, sink := newTestGossip(2)
		defer g.close()
		g.failed(0)
		at(sink, 5*time.Second)
		g.healed(0)
		at(sink, 30*time.Second)
		assert.Empty(t, sink.all())
		g.failed(0)
		at(sink, 40*time.Second)
		g.healed(0)
		at(sink, 41*time.Second)
		assert.Equal(t, []announcement{
			{40 * time.Second, 0, ChangeDown},
			{41 * time.Second, 0, ChangeUp},
		}, sink.all())
	})
}

func TestGossipAddAndRemove(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g, sink := newTestGossip(2)
		defer g.close()
		g.add(2)
		assert.False(t, g.view()[2].known, "not in system.peers before gossip spreads it")
		g.portOpened(2)
		at(sink, 999*time.Millisecond)
		assert.Empty(t, sink.all())
		at(sink, time.Second)
		assert.True(t, g.view()[2].known)
		g.removed(2)
		at(sink, 1500*time.Millisecond)
		assert.Equal(t, []announcement{
			{time.Second, 2, ChangeNewNode},
			{time.Second, 2, ChangeUp},
			{1500 * time.Millisecond, 2, ChangeRemoved},
		}, sink.all())
		assert.False(t, g.view()[2].known)
	})
}

func TestGossipCloseCancelsPendingAnnouncements(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g, sink := newTestGossip(2)
		g.failed(0)
		g.stopped(1)
		g.close()
		at(sink, time.Minute)
		assert.Empty(t, sink.all())
	})
}
