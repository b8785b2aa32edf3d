package bounded

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

// The goroutine left hanging by TestRunReportsAHangWithEveryStack ends with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that keeps what Run reports instead of failing the real test.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}

func TestRunReturnsWhenTheCallDoes(t *testing.T) {
	r := &recorder{TB: t}
	assert.True(t, Run(r, "a quick call", time.Second, func() {}))
	assert.False(t, r.failed)
}

// A call that hangs fails the test within the bound, naming the call and showing the stack of
// the goroutine it hangs in.
func TestRunReportsAHangWithEveryStack(t *testing.T) {
	r := &recorder{TB: t}
	release := make(chan struct{})
	defer close(release)
	begin := time.Now()
	ok := Run(r, "the stuck Close", 100*time.Millisecond, func() { stuckInUpstream(release) })
	took := time.Since(begin)
	assert.False(t, ok)
	assert.True(t, r.failed)
	assert.Less(t, took, 5*time.Second, "Run returned at its bound")
	assert.GreaterOrEqual(t, took, 100*time.Millisecond)
	assert.Contains(t, r.msg, "the stuck Close did not return within 100ms")
	assert.Contains(t, r.msg, "bounded.stuckInUpstream", "the hung goroutine's stack")
	assert.Contains(t, r.msg, "bounded.TestRunReportsAHangWithEveryStack", "the other goroutines' stacks")
}

func stuckInUpstream(release chan struct{}) { <-release }

func TestStacksAreAGoroutineDump(t *testing.T) {
	assert.True(t, strings.HasPrefix(Stacks(), "goroutine "))
}
