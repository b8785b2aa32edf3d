package golane

import (
	"context"
	"sync"

	"github.com/gocql/gocql"
)

// Pin is a gocql v1 HostSelectionPolicy that sends a query whose context names a host
// (OnHost) to that host alone, and any other query to the policy it wraps: gocql v1.7.0 has no
// Query.SetHostID, so a load-balancing policy is its way to target one host.
type Pin struct {
	gocql.HostSelectionPolicy

	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by connect address
}

// NewPin wraps inner (gocql's default is gocql.RoundRobinHostPolicy()).
func NewPin(inner gocql.HostSelectionPolicy) *Pin {
	return &Pin{HostSelectionPolicy: inner, hosts: map[string]*gocql.HostInfo{}}
}

type pinKey struct{}

// OnHost returns a context whose queries go to the host at address addr only.
func OnHost(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, pinKey{}, addr)
}

func (p *Pin) remember(h *gocql.HostInfo) {
	p.mu.Lock()
	p.hosts[h.ConnectAddress().String()] = h
	p.mu.Unlock()
}

// AddHost implements gocql.HostStateNotifier.
func (p *Pin) AddHost(h *gocql.HostInfo) { p.remember(h); p.HostSelectionPolicy.AddHost(h) }

// HostUp implements gocql.HostStateNotifier.
func (p *Pin) HostUp(h *gocql.HostInfo) { p.remember(h); p.HostSelectionPolicy.HostUp(h) }

// Pick implements gocql.HostSelectionPolicy.
func (p *Pin) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	addr, ok := "", false
	if q != nil {
		addr, ok = q.Context().Value(pinKey{}).(string)
	}
	if !ok {
		return p.HostSelectionPolicy.Pick(q)
	}
	p.mu.Lock()
	h := p.hosts[addr]
	p.mu.Unlock()
	given := h == nil
	return func() gocql.SelectedHost {
		if given {
			return nil
		}
		given = true
		return selected{h}
	}
}

type selected struct{ h *gocql.HostInfo }

func (s selected) Info() *gocql.HostInfo { return s.h }
func (s selected) Mark(error)            {}
