package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cqlcontrol/cqlcontrol/metrics"
)

// metricsHandler serves col's metrics and, as a process should, the Go runtime's (go_*) and
// the process's (process_*: CPU, memory, open file descriptors).
func metricsHandler(col *metrics.Collectors) http.Handler {
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(prometheus.Gatherers{col.Gatherer(), rt}, promhttp.HandlerOpts{})
}

// metricsServer serves one Collectors' metrics on /metrics until closed.
type metricsServer struct {
	url  string
	srv  *http.Server
	done chan struct{} // closed when Serve has returned
}

// serveMetrics listens on addr and serves h on /metrics; an empty addr serves nothing (nil).
func serveMetrics(addr string, h http.Handler) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	m := &metricsServer{
		url:  "http://" + reachableAddr(ln.Addr()) + "/metrics",
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln)
	}()
	return m, nil
}

// reachableAddr names a listener's address so that a browser can use it: a wildcard listener
// is reachable on localhost.
func reachableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}

// Close stops serving, letting requests in progress finish for up to two seconds. A nil
// *metricsServer (metrics off) closes to nil.
func (m *metricsServer) Close() error {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	<-m.done
	return err
}
