package clientprobe

import (
	"context"
	"strings"
	"sync"

	"github.com/gocql/gocql"
)

// HostPin is a HostSelectionPolicy wrapper that offers a query whose context names a host
// (WithHost) to that host alone, so the query answers only if gocql has a usable connection to
// it; other queries go to the wrapped policy. Hosts are known from gocql's AddHost and HostUp
// callbacks.
type HostPin struct {
	gocql.HostSelectionPolicy

	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by lower-case host ID and by connect address
}

// NewHostPin wraps inner.
func NewHostPin(inner gocql.HostSelectionPolicy) *HostPin {
	return &HostPin{HostSelectionPolicy: inner, hosts: map[string]*gocql.HostInfo{}}
}

type pinKey struct{}

// WithHost returns a context whose queries go to host only: a host ID, or an IP address as
// gocql connects to it.
func WithHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, pinKey{}, strings.ToLower(host))
}

func (p *HostPin) remember(h *gocql.HostInfo) {
	p.mu.Lock()
	p.hosts[strings.ToLower(h.HostID())] = h
	p.hosts[h.ConnectAddress().String()] = h
	p.mu.Unlock()
}

// AddHost implements gocql.HostStateNotifier.
func (p *HostPin) AddHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.AddHost(h)
	p.remember(h)
}

// HostUp implements gocql.HostStateNotifier.
func (p *HostPin) HostUp(h *gocql.HostInfo) {
	p.HostSelectionPolicy.HostUp(h)
	p.remember(h)
}

// RemoveHost implements gocql.HostStateNotifier.
func (p *HostPin) RemoveHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.RemoveHost(h)
	p.mu.Lock()
	delete(p.hosts, strings.ToLower(h.HostID()))
	delete(p.hosts, h.ConnectAddress().String())
	p.mu.Unlock()
}

// Pick implements gocql.HostSelectionPolicy.
func (p *HostPin) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	if q == nil {
		return p.HostSelectionPolicy.Pick(q)
	}
	key, ok := q.Context().Value(pinKey{}).(string)
	if !ok {
		return p.HostSelectionPolicy.Pick(q)
	}
	p.mu.Lock()
	h := p.hosts[key]
	p.mu.Unlock()
	offered := h == nil
	return func() gocql.SelectedHost {
		if offered {
			return nil
		}
		offered = true
		return pinned{h}
	}
}

type pinned struct{ h *gocql.HostInfo }

func (s pinned) Info() *gocql.HostInfo { return s.h }
func (s pinned) Mark(error)            {}

var _ gocql.HostSelectionPolicy = (*HostPin)(nil)
