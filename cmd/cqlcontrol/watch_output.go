package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// note is one line for the printing loop: who says it, and what.
type note struct {
	source, text string
}

// watchObserver turns what the control connection and gocql's host events report into lines
// for the printing loop, and forwards everything to the metrics. Its methods run on the
// ControlConnection's goroutines and never block: a line that does not fit in notes is dropped.
type watchObserver struct {
	*metrics.Collectors
	notes chan note

	mu     sync.Mutex
	failed string // the last failed attempt, said with the delay chosen after it
}

func (o *watchObserver) note(source, format string, a ...any) {
	select {
	case o.notes <- note{source, fmt.Sprintf(format, a...)}:
	default:
	}
}

// AttemptFinished keeps a failure for DelayChosen, which follows it, so that one line says
// both; a permanent failure is said at once.
func (o *watchObserver) AttemptFinished(a reconnect.Attempt, out reconnect.Outcome, err error, took time.Duration) {
	if out == reconnect.OutcomeFailure || out == reconnect.OutcomeNonRetryable {
		how := ""
		if a.ReArmed {
			how = " (re-armed: " + string(a.Reason) + ")"
		}
		text := fmt.Sprintf("attempt %d%s failed after %v: %s", a.N, how, took.Round(time.Millisecond), describeErr(err))
		o.mu.Lock()
		o.failed = text
		o.mu.Unlock()
	}
	o.Collectors.AttemptFinished(a, out, err, took)
}

func (o *watchObserver) DelayChosen(d time.Duration, capped bool) {
	o.mu.Lock()
	failed := o.failed
	o.failed = ""
	o.mu.Unlock()
	if d > 0 {
		c := ""
		if capped {
			c = " (DelayCap)"
		}
		if failed != "" {
			failed += "; "
		}
		o.note("control", "%snext attempt in %v%s", failed, d.Round(time.Millisecond), c)
	} else if failed != "" {
		o.note("control", "%s", failed)
	}
	o.Collectors.DelayChosen(d, capped)
}

// observer is o as the ControlConnection's observer: its Collectors' with o's lines added.
func (o *watchObserver) observer() controlconn.Observer {
	obs := o.Collectors.Observer()
	obs.Connected, obs.Lost, obs.DataPathLag = o.Connected, o.Lost, o.DataPathLag
	return obs
}

func (o *watchObserver) Connected(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
	o.note("control", "connected to %s (host %s), protocol v%d", ep.Addr, ep.HostID, uint8(v))
	o.Collectors.Connected(ep, v)
}

func (o *watchObserver) Lost(ep controlconn.Endpoint, err error, uptime time.Duration) {
	o.note("control", "lost the connection to %s after %v: %s", ep.Addr, uptime.Round(time.Millisecond),
		strings.TrimPrefix(describeErr(err), ep.Addr+" "))
	o.Collectors.Lost(ep, err, uptime)
}

// DataPathLag says how long gocql's pool took to reconnect to a host after our connection saw
// it announced UP.
func (o *watchObserver) DataPathLag(ep controlconn.Endpoint, lag time.Duration) {
	o.note("gocql", "data path to %s back %v after the UP our connection saw", ep.Addr, lag.Round(time.Millisecond))
	o.Collectors.DataPathLag(ep, lag)
}

// Received sees gocql's host events (what the session's pools saw); our own connection's events
// show up as metadata changes.
func (o *watchObserver) Received(e hostevents.Event) {
	if e.Source == hostevents.SourceGocql {
		o.note("gocql", "%s %s (host %s)", e.Kind, net.JoinHostPort(e.Addr.String(), fmt.Sprint(e.Port)), e.HostID)
	}
	o.Collectors.Received(e)
}

// watchPrinter writes watch's event lines, all in one format: "15:04:05.000  source   text".
// The time is when the line is printed, so that the lines' times never go backwards. Only the
// printing loop uses it.
type watchPrinter struct {
	w    io.Writer
	last time.Time // when the last line was printed
}

func (p *watchPrinter) line(source, format string, a ...any) {
	p.last = time.Now()
	fmt.Fprintf(p.w, "%s  %-8s %s\n", p.last.Format("15:04:05.000"), source, fmt.Sprintf(format, a...))
}

func (p *watchPrinter) note(n note) { p.line(n.source, "%s", n.text) }

// describeErr says an attempt's or a loss's error briefly, in words: each host dialled with
// what it met ("127.0.0.1:9042 connection refused"), and the class of a permanent failure.
func describeErr(err error) string {
	var de *controlconn.DialError
	if errors.As(err, &de) {
		if len(de.Errs) == 0 {
			return "no host to dial"
		}
		parts := make([]string, len(de.Errs))
		for i, e := range de.Errs {
			parts[i] = describeErr(e)
		}
		return strings.Join(parts, "; ")
	}
	var ce *controlconn.ConnError
	if errors.As(err, &ce) {
		what := describeCause(ce.Err)
		switch ce.Class {
		case controlconn.ClassAuth:
			what = "authentication failed: " + what
		case controlconn.ClassProtocol:
			what = "protocol error: " + what
		case controlconn.ClassTLS:
			what = "TLS failure: " + what
		}
		return ce.Addr + " " + what
	}
	return describeCause(err)
}

// describeCause names the usual network failures in words and leaves other errors as they are.
func describeCause(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "no error"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the node closed the connection"
	case errors.Is(err, syscall.ECONNRESET):
		return "the node reset the connection"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, controlconn.ErrHeartbeat):
		return "no answer to a heartbeat (half-open connection?)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return strings.TrimPrefix(err.Error(), "controlconn: ")
}

// printTopology prints the cluster as the snapshot describes it, one host per line, sorted by
// address. The control host is shown at the address actually dialled (a contact point's own
// port rather than --port).
func printTopology(w io.Writer, snap *metadata.Snapshot, st controlconn.Status) error {
	agreement := "yes"
	if !snap.SchemaAgreement() {
		agreement = "no: " + strings.Join(snap.SchemaVersions(), ", ")
	}
	fmt.Fprintf(w, "cluster %q: %d hosts, partitioner %s, schema agreement %s; control connection on %s (host %s)\n",
		snap.ClusterName(), snap.Len(), snap.Partitioner(), agreement, st.Host.Addr, st.Host.HostID)
	type row struct {
		addr  string
		h     metadata.Host
		state metadata.State
	}
	var rows []row
	for h, state := range snap.All() {
		addr := h.Addr()
		if st.Host.HostID != "" && strings.EqualFold(h.HostID(), st.Host.HostID) && st.Host.Addr != "" {
			addr = st.Host.Addr
		}
		rows = append(rows, row{addr, h, state})
	}
	slices.SortFunc(rows, func(a, b row) int { return compareAddrs(a.addr, b.addr) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tHOST ID\tDC\tRACK\tSTATE\tTOKENS\tVERSION")
	for _, r := range rows {
		h := r.h
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.addr, h.HostID(), h.DataCenter(), h.Rack(), r.state, h.NumTokens(), h.ReleaseVersion())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range st.SkippedPeers { // rows the ring was built without
		fmt.Fprintf(w, "system.peers row %d (peer %v) skipped: %v\n", p.Row, p.Peer, p.Err)
	}
	return nil
}

// compareAddrs orders "ip:port" addresses numerically (127.0.0.2 before 127.0.0.10), and
// anything unparsable after them, as text.
func compareAddrs(a, b string) int {
	pa, ea := netip.ParseAddrPort(a)
	pb, eb := netip.ParseAddrPort(b)
	switch {
	case ea == nil && eb == nil:
		return pa.Compare(pb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// formatChange says one metadata change on one line.
func formatChange(c metadata.Change) string {
	if c.Kind == metadata.SchemaChanged {
		return fmt.Sprintf("%s: schema versions differ from the last snapshot", c.Kind)
	}
	h := c.Host
	line := fmt.Sprintf("%s %s (host %s, %s/%s)", c.Kind, h.Addr(), h.HostID(), h.DataCenter(), h.Rack())
	if c.Old != nil {
		switch c.Kind {
		case metadata.HostMoved:
			line += fmt.Sprintf(" tokens %d -> %d", c.Old.NumTokens(), h.NumTokens())
		case metadata.HostUpdated:
			line += fmt.Sprintf(" (was %s %s/%s %s, now version %s)", c.Old.Addr(), c.Old.DataCenter(), c.Old.Rack(), c.Old.ReleaseVersion(), h.ReleaseVersion())
		}
	}
	return line
}
