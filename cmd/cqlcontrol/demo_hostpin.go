package main

import (
	"context"
	"strings"
	"sync"

	"github.com/gocql/gocql"
)

// hostPinPolicy lets the data path probe send a read to one host: a query whose context names
// a host ID (withPinnedHost) is offered that host alone, so it answers only if gocql has a usable
// connection to it. Other queries go to the inner policy.
type hostPinPolicy struct {
	gocql.HostSelectionPolicy

	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by lower-case host ID; written by gocql's callbacks, read by Pick
}

func newHostPinPolicy(inner gocql.HostSelectionPolicy) *hostPinPolicy {
	return &hostPinPolicy{HostSelectionPolicy: inner, hosts: map[string]*gocql.HostInfo{}}
}

type pinnedHostKey struct{}

func withPinnedHost(ctx context.Context, hostID string) context.Context {
	return context.WithValue(ctx, pinnedHostKey{}, strings.ToLower(hostID))
}

func (p *hostPinPolicy) remember(h *gocql.HostInfo) {
	p.mu.Lock()
	p.hosts[strings.ToLower(h.HostID())] = h
	p.mu.Unlock()
}

func (p *hostPinPolicy) AddHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.AddHost(h)
	p.remember(h)
}

func (p *hostPinPolicy) HostUp(h *gocql.HostInfo) {
	p.HostSelectionPolicy.HostUp(h)
	p.remember(h)
}

func (p *hostPinPolicy) RemoveHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.RemoveHost(h)
	p.mu.Lock()
	delete(p.hosts, strings.ToLower(h.HostID()))
	p.mu.Unlock()
}

func (p *hostPinPolicy) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	if q == nil {
		return p.HostSelectionPolicy.Pick(q)
	}
	id, ok := q.Context().Value(pinnedHostKey{}).(string)
	if !ok {
		return p.HostSelectionPolicy.Pick(q)
	}
	p.mu.Lock()
	h := p.hosts[id]
	p.mu.Unlock()
	offered := h == nil
	return func() gocql.SelectedHost {
		if offered {
			return nil
		}
		offered = true
		return pinnedHost{h}
	}
}

type pinnedHost struct{ h *gocql.HostInfo }

func (s pinnedHost) Info() *gocql.HostInfo { return s.h }
func (s pinnedHost) Mark(error)            {}

var _ gocql.HostSelectionPolicy = (*hostPinPolicy)(nil)
