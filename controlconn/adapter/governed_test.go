package adapter

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

type countingPolicy struct{ failures, resets int }

func (p *countingPolicy) AddFailure(error, string) bool { p.failures++; return true }
func (p *countingPolicy) Reset(string)                  { p.resets++ }

// A refusal (ErrGoverned, wrapped) never convicts and never reaches the inner policy: it goes
// to Refused (the driver's pool at the host is empty), when set; any other failure, and Reset,
// are the inner policy's.
func TestGovernedConvictionIgnoresRefusals(t *testing.T) {
	inner := &countingPolicy{}
	var refused []string
	c := GovernedConviction[string]{Inner: inner, Refused: func(h string) { refused = append(refused, h) }}
	assert.False(t, c.AddFailure(fmt.Errorf("dial: %w", ErrGoverned), "h"))
	assert.Zero(t, inner.failures)
	assert.Equal(t, []string{"h"}, refused)
	assert.True(t, c.AddFailure(errors.New("connection refused"), "h"))
	c.Reset("h")
	assert.Equal(t, 1, inner.failures)
	assert.Equal(t, 1, inner.resets)
	assert.Len(t, refused, 1, "a real failure is not a refusal")
	c.Refused = nil
	assert.False(t, c.AddFailure(fmt.Errorf("dial: %w", ErrGoverned), "h"), "no Refused: still no conviction")
}

// The cache returns what was put, forgets what Retain rejects, and a nil cache holds nothing.
func TestHostCache(t *testing.T) {
	var c HostCache[*int]
	one, two := 1, 2
	c.Put("127.0.0.1:9042", &one)
	c.Put("127.0.0.2:9042", &two)
	got, ok := c.Get("127.0.0.1:9042")
	assert.True(t, ok)
	assert.Same(t, &one, got)
	c.Retain(func(addr string) bool { return addr == "127.0.0.2:9042" })
	assert.Equal(t, 1, c.Len())
	_, ok = c.Get("127.0.0.1:9042")
	assert.False(t, ok, "forgotten")
	var none *HostCache[*int]
	_, ok = none.Get("127.0.0.2:9042")
	assert.False(t, ok)
}
