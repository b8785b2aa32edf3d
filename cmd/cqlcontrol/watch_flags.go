package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/internal/plan"
)

// watchDescription is what "cqlcontrol watch --help" says between the usage line and the flags.
const watchDescription = `Attaches a control connection to a cluster, prints its topology, then every topology,
status and schema change and every change of the connection's state, until interrupted
(Ctrl-C: exit status 130).

Ports: a contact point in --hosts may carry its own port (host:port); every other host,
including each peer the cluster reports, is dialled at --port, as gocql does with
ClusterConfig.Port. The topology shows the address actually dialled for the control host.

Exit status: 1 when no connection was made within --connect-timeout (the error says why:
refused, timed out, authentication, protocol, TLS); 2 for a mistake in the flags or hosts.
Once connected, a lost connection is retried for as long as watch runs.`

func parseWatchFlags(args []string, stdout, stderr io.Writer) (watchConfig, error) {
	fs := newFlagSet("watch", "--hosts a,b,c [flags]", watchDescription, stdout, stderr)
	cfg := watchConfig{fs: fs}
	hosts := fs.String("hosts", "", "contact points, comma-separated: `host[:port],...` (required)")
	fs.IntVar(&cfg.port, "port", defaultPort, "native protocol port of contact points without one, and of every peer")
	fs.DurationVar(&cfg.connectTimeout, "connect-timeout", 30*time.Second, "give up (exit 1) when the first connection is not made within this `duration` (0: never)")
	fs.StringVar(&cfg.username, "username", "", "user name for PasswordAuthenticator (authentication is off without it)")
	fs.StringVar(&cfg.password, "password", "", "password for PasswordAuthenticator (default: $"+passwordEnv+")")
	fs.BoolVar(&cfg.tls, "tls", false, "connect with TLS (implied by the other --tls-* flags)")
	fs.StringVar(&cfg.tlsCA, "tls-ca", "", "PEM `file` of the CA certificates to verify the nodes with (default: the system's)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM `file` of the client certificate (with --tls-key)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM `file` of the client certificate's key (with --tls-cert)")
	fs.BoolVar(&cfg.tlsInsecure, "tls-insecure", false, "do not verify the nodes' certificates or host names")
	fs.StringVar(&cfg.localDC, "local-dc", "", "data center whose hosts the control connection prefers")
	fs.StringVar(&cfg.metricsAddr, "metrics", "127.0.0.1:0", "serve Prometheus /metrics on this `address` (port 0: any free port; empty: off)")
	fs.BoolVar(&cfg.session, "session", true, "also open a gocql session, as an application does: its host events re-arm recovery")
	fs.BoolVar(&cfg.verbose, "v", false, "log gocql's and the control connection's messages to stderr")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	bad := func(format string, a ...any) (watchConfig, error) { return cfg, flagError(fs, format, a...) }
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.hosts = append(cfg.hosts, h)
		}
	}
	if cfg.password == "" {
		cfg.password = os.Getenv(passwordEnv)
	}
	cfg.tls = cfg.tls || cfg.tlsCA != "" || cfg.tlsCert != "" || cfg.tlsKey != "" || cfg.tlsInsecure
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case len(cfg.hosts) == 0:
		return bad("--hosts is required")
	case cfg.port < 1 || cfg.port > 65535:
		return bad("--port %d is not a port (1-65535)", cfg.port)
	case cfg.connectTimeout < 0:
		return bad("--connect-timeout must not be negative, not %v", cfg.connectTimeout)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return bad("--tls-cert and --tls-key go together")
	case cfg.password != "" && cfg.username == "":
		return bad("a password without --username")
	}
	for _, h := range cfg.hosts {
		if err := checkHostSyntax(h); err != nil {
			return bad("--hosts: %v", err)
		}
	}
	return cfg, nil
}

// checkHostSyntax accepts "host", "ip", "host:port", "ip:port" and "[ipv6]:port".
func checkHostSyntax(h string) error {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return nil // no port: --port applies
		}
		return fmt.Errorf("%q is not host or host:port", h)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", h, port)
	}
	return nil
}

// hostLookupTimeout bounds the up-front resolution of each contact point name.
const hostLookupTimeout = 10 * time.Second

// checkHosts resolves every contact point once, up front, so that a typo is one clear line
// and exit status 2 rather than a retry loop. (Later attempts resolve them again: pods come
// back with new addresses.)
func (cfg watchConfig) checkHosts(ctx context.Context) error {
	for _, h := range cfg.hosts {
		lctx, cancel := context.WithTimeout(ctx, hostLookupTimeout)
		eps, err := plan.ResolveContactPoints(lctx, []string{h}, cfg.port, cfg.resolve)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || len(eps) == 0 {
			if err == nil {
				err = errors.New("no IPv4 or IPv6 address")
			}
			return flagError(cfg.fs, "--hosts: %s: %v", h, err)
		}
	}
	return nil
}

// portNote says, when a contact point carries a port other than --port, that peers are
// dialled at --port nonetheless.
func (cfg watchConfig) portNote() string {
	for _, h := range cfg.hosts {
		if _, p, err := net.SplitHostPort(h); err == nil && p != strconv.Itoa(cfg.port) {
			return fmt.Sprintf(" (peers at --port %d, as gocql dials them)", cfg.port)
		}
	}
	return fmt.Sprintf(" (port %d)", cfg.port)
}

// gocqlConfig is the gocql configuration an application would have; the ControlConnection takes
// its connection settings (hosts, port, authenticator, TLS) from it.
func (cfg watchConfig) gocqlConfig(stderr io.Writer) *gocql.ClusterConfig {
	cluster := gocql.NewCluster(cfg.hosts...)
	cluster.Port = cfg.port
	if cfg.username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: cfg.username, Password: cfg.password}
	}
	if cfg.tls {
		cluster.SslOpts = &gocql.SslOptions{
			CaPath:                 cfg.tlsCA,
			CertPath:               cfg.tlsCert,
			KeyPath:                cfg.tlsKey,
			EnableHostVerification: !cfg.tlsInsecure,
		}
	}
	if cfg.localDC != "" {
		cluster.PoolConfig.HostSelectionPolicy = gocql.DCAwareRoundRobinPolicy(cfg.localDC)
	}
	cluster.Logger = log.New(io.Discard, "", 0)
	if cfg.verbose {
		cluster.Logger = log.New(stderr, "gocql ", log.Lmicroseconds)
	}
	return cluster
}
