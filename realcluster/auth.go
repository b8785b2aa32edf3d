package realcluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// Role is a login role that Start (Config.Roles) or CreateRole creates, logged in as the
// default superuser cassandra/cassandra.
type Role struct {
	Name string
	// Password is the role's password. Cassandra hashes it with bcrypt at its own cost
	// (the system property cassandra.auth_bcrypt_gensalt_log2_rounds, 10 by default) unless
	// HashedPassword is set.
	Password string
	// HashedPassword, when set, is stored as the role's bcrypt hash as is
	// (CREATE ROLE ... WITH HASHED PASSWORD): a hash of a higher cost ("$2a$12$...") makes
	// every login of the role cost that much (each step of the cost doubles it).
	HashedPassword string
	Superuser      bool
}

// WaitSuperuser waits until the default superuser cassandra/cassandra can log in on node 0:
// with PasswordAuth it exists only Config.SuperuserSetupDelay after the first start (10 s by
// Cassandra's default).
func (c *Cluster) WaitSuperuser(ctx context.Context) error {
	s, err := c.superuserSession(ctx)
	if err != nil {
		return err
	}
	s.Close()
	return nil
}

func (c *Cluster) superuserSession(ctx context.Context) (*gocql.Session, error) {
	if !c.cfg.PasswordAuth {
		return nil, errors.New("realcluster: roles need Config.PasswordAuth")
	}
	var last error
	for {
		cfg := gocql.NewCluster(c.Node(0).IP())
		cfg.Port = c.cfg.Port
		cfg.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "cassandra"}
		cfg.DisableInitialHostLookup = true
		cfg.NumConns = 1
		cfg.Timeout = 5 * time.Second
		cfg.ConnectTimeout = 5 * time.Second
		cfg.Consistency = gocql.One
		s, err := cfg.CreateSession()
		if err == nil {
			return s, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("realcluster: the default superuser cannot log in: %w (last: %v)", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// CreateRole waits for the default superuser (WaitSuperuser) and creates r on the cluster
// (IF NOT EXISTS: a role left from an earlier call stays as it was).
func (c *Cluster) CreateRole(ctx context.Context, r Role) error {
	if r.Name == "" || (r.Password == "") == (r.HashedPassword == "") {
		return fmt.Errorf("realcluster: role %q: want a name and exactly one of Password and HashedPassword", r.Name)
	}
	s, err := c.superuserSession(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if rf := c.cfg.AuthReplication; rf > 1 {
		q := fmt.Sprintf("ALTER KEYSPACE system_auth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", rf)
		if err := s.Query(q).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("realcluster: system_auth replication %d: %w", rf, err)
		}
	}
	return s.Query(createRoleCQL(r)).WithContext(ctx).Consistency(gocql.Quorum).Exec()
}

// createRoleCQL is the statement CreateRole runs.
func createRoleCQL(r Role) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	pw := "PASSWORD = " + q(r.Password)
	if r.HashedPassword != "" {
		pw = "HASHED PASSWORD = " + q(r.HashedPassword)
	}
	return fmt.Sprintf("CREATE ROLE IF NOT EXISTS %q WITH %s AND LOGIN = true AND SUPERUSER = %v", r.Name, pw, r.Superuser)
}

// Logins are a node's login counters since its JVM started.
type Logins struct {
	// AuthTasks is the completed tasks of the auth executor (nodetool tpstats'
	// Native-Transport-Auth-Requests, native_transport_max_auth_threads wide): every
	// AUTH_RESPONSE the node handled, one bcrypt check each with PasswordAuthenticator.
	AuthTasks int64
	// Success and Failure are ClientMetrics' AuthSuccess and AuthFailure counts
	// (org.apache.cassandra.metrics:type=Client over JMX, read by nodetool's sjk); -1 when
	// they could not be read.
	Success, Failure int64
}

// Logins reads node i's login counters with nodetool: three short JVMs (tpstats and two sjk
// reads, about 2 s of CPU each), run at once so that the counters are read close together.
func (c *Cluster) Logins(ctx context.Context, i int) (Logins, error) {
	l := Logins{Success: -1, Failure: -1}
	var (
		wg      sync.WaitGroup
		tpstats string
		tpErr   error
	)
	wg.Go(func() { tpstats, tpErr = c.Nodetool(ctx, i, "tpstats") })
	for _, m := range []struct {
		name string
		to   *int64
	}{{"AuthSuccess", &l.Success}, {"AuthFailure", &l.Failure}} {
		wg.Go(func() {
			out, err := c.Nodetool(ctx, i, "sjk", "mx", "-mg", "-b", "org.apache.cassandra.metrics:type=Client,name="+m.name, "-f", "Count")
			if err != nil {
				return
			}
			if v, ok := lastInt(out); ok {
				*m.to = v
			}
		})
	}
	wg.Wait()
	if tpErr != nil {
		return Logins{}, tpErr
	}
	var err error
	if l.AuthTasks, err = authTasks(tpstats); err != nil {
		return Logins{}, fmt.Errorf("realcluster: node%d: %w", i+1, err)
	}
	return l, nil
}

var authRow = regexp.MustCompile(`(?m)^Native-Transport-Auth-Requests\s+(\d+)\s+(\d+)\s+(\d+)`)

// authTasks is the completed count of the auth executor's row of nodetool tpstats' output
// (Pool Name, Active, Pending, Completed, ...); a node that has handled no login yet has no row.
func authTasks(tpstats string) (int64, error) {
	if !strings.Contains(tpstats, "Pool Name") {
		return 0, fmt.Errorf("no thread pool table in nodetool tpstats: %q", lastLines(tpstats, 3))
	}
	m := authRow.FindStringSubmatch(tpstats)
	if m == nil {
		return 0, nil
	}
	return strconv.ParseInt(m[3], 10, 64)
}

// lastInt is the last line of out that is a bare integer.
func lastInt(out string) (int64, bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for j := len(lines) - 1; j >= 0; j-- {
		if v, err := strconv.ParseInt(strings.TrimSpace(lines[j]), 10, 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

// DisableBinary turns node i's native transport off (nodetool disablebinary): its CQL
// clients are disconnected and its port refuses, the JVM and gossip go on.
func (c *Cluster) DisableBinary(ctx context.Context, i int) error {
	_, err := c.Nodetool(ctx, i, "disablebinary")
	return err
}

// EnableBinary turns node i's native transport back on (nodetool enablebinary) and returns
// once it answers a CQL handshake, at the time it did.
func (c *Cluster) EnableBinary(ctx context.Context, i int) (time.Time, error) {
	if _, err := c.Nodetool(ctx, i, "enablebinary"); err != nil {
		return time.Time{}, err
	}
	return awaitCQL(ctx, c.Node(i).Addr(), c.cfg.StartTimeout)
}
