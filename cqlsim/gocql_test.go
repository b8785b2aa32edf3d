package cqlsim

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
	"github.com/scylladb/gocqlx/v2/qb"
	cqlxtable "github.com/scylladb/gocqlx/v2/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingPolicy wraps gocql's policy and records what the session tells it about hosts.
type recordingPolicy struct {
	gocql.HostSelectionPolicy
	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by host ID
	log   []string                   // "add|up|down|remove <ip>"
}

func newRecordingPolicy() *recordingPolicy {
	return &recordingPolicy{HostSelectionPolicy: gocql.RoundRobinHostPolicy(), hosts: map[string]*gocql.HostInfo{}}
}

func (p *recordingPolicy) note(what string, h *gocql.HostInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if what != "remove" {
		p.hosts[h.HostID()] = h
	} else {
		delete(p.hosts, h.HostID())
	}
	p.log = append(p.log, what+" "+h.ConnectAddress().String())
}

func (p *recordingPolicy) AddHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.AddHost(h)
	p.note("add", h)
}

func (p *recordingPolicy) RemoveHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.RemoveHost(h)
	p.note("remove", h)
}

func (p *recordingPolicy) HostUp(h *gocql.HostInfo) {
	p.HostSelectionPolicy.HostUp(h)
	p.note("up", h)
}

func (p *recordingPolicy) HostDown(h *gocql.HostInfo) {
	p.HostSelectionPolicy.HostDown(h)
	p.note("down", h)
}

func (p *recordingPolicy) known() map[string]*gocql.HostInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]*gocql.HostInfo, len(p.hosts))
	for k, v := range p.hosts {
		out[k] = v
	}
	return out
}

// saw reports whether the policy was told `what` about ip after the first `from` log entries.
func (p *recordingPolicy) saw(what, ip string, from int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.log[min(from, len(p.log)):] {
		if l == what+" "+ip {
			return true
		}
	}
	return false
}

func (p *recordingPolicy) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log)
}

// eventually polls cond until it holds or d passes (end-to-end checks against real sockets).
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newSession(t *testing.T, c *Cluster, p *recordingPolicy, tweak func(*gocql.ClusterConfig)) *gocql.Session {
	t.Helper()
	cfg := gocql.NewCluster(c.ContactPoints()...)
	cfg.Port = c.Port()
	cfg.ProtoVersion = 0
	cfg.Timeout = 3 * time.Second
	cfg.ConnectTimeout = 3 * time.Second
	cfg.NumConns = 1
	cfg.PoolConfig.HostSelectionPolicy = p
	cfg.Logger = testLogger{t}
	if tweak != nil {
		tweak(cfg)
	}
	s, err := cfg.CreateSession()
	require.NoError(t, err)
	bounded.Close(t, "gocql Session.Close", s.Close)
	return s
}

type testLogger struct{ t *testing.T }

func (l testLogger) Print(v ...any)                 { l.t.Log(v...) }
func (l testLogger) Printf(format string, v ...any) { l.t.Logf(format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(v...) }

// requireDiscovered checks gocql's view of every node against the simulator's.
func requireDiscovered(t *testing.T, c *Cluster, p *recordingPolicy) {
	t.Helper()
	eventually(t, 5*time.Second, "all hosts added", func() bool { return len(p.known()) == len(c.Nodes()) })
	hosts := p.known()
	for _, n := range c.Nodes() {
		h, ok := hosts[n.HostID()]
		require.True(t, ok, "host %s (%s) not discovered", n.HostID(), n.Addr())
		assert.Equal(t, n.IP().String(), h.ConnectAddress().String())
		assert.Equal(t, c.Port(), h.Port())
		assert.Equal(t, n.DC(), h.DataCenter())
		assert.Equal(t, n.Rack(), h.Rack())
		got, want := h.Tokens(), n.Tokens()
		sort.Strings(got)
		sort.Strings(want)
		assert.Equal(t, want, got)
	}
}

type person struct {
	FirstName string
	LastName  string
	Email     []string
	Age       int
}

var personTable = cqlxtable.New(cqlxtable.Metadata{
	Name:    "app.person",
	Columns: []string{"first_name", "last_name", "email", "age"},
	PartKey: []string{"first_name"},
	SortKey: []string{"last_name"},
})

// dataPath creates a table and writes and reads it through gocqlx.
func dataPath(t *testing.T, s *gocql.Session) {
	t.Helper()
	require.NoError(t, s.Query("CREATE KEYSPACE IF NOT EXISTS app WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").Exec())
	require.NoError(t, s.Query("CREATE TABLE IF NOT EXISTS app.person (first_name text, last_name text, email list<text>, age int, PRIMARY KEY (first_name, last_name))").Exec())
	x := gocqlx.NewSession(s)
	people := []person{
		{"Ada", "Lovelace", []string{"ada@example.org"}, 36},
		{"Alan", "Turing", []string{"alan@example.org", "turing@example.org"}, 41},
	}
	for _, p := range people {
		require.NoError(t, x.Query(personTable.Insert()).BindStruct(p).ExecRelease())
	}
	b := s.NewBatch(gocql.LoggedBatch)
	b.Query("INSERT INTO app.person (first_name, last_name, age) VALUES (?, ?, ?)", "Grace", "Hopper", 85)
	b.Query("DELETE FROM app.person WHERE first_name = ? AND last_name = ?", "Grace", "Hopper")
	require.NoError(t, s.ExecuteBatch(b))
	var got person
	require.NoError(t, x.Query(personTable.Get()).BindStruct(person{FirstName: "Alan", LastName: "Turing"}).GetRelease(&got))
	assert.Equal(t, people[1], got)
	var all []person
	require.NoError(t, x.Query(qb.Select("app.person").ToCql()).SelectRelease(&all))
	assert.ElementsMatch(t, people, all)
	var byPart []person
	require.NoError(t, x.Query(personTable.Select()).BindMap(qb.M{"first_name": "Ada"}).SelectRelease(&byPart))
	assert.Equal(t, people[:1], byPart)
	require.NoError(t, x.Query(personTable.Update("age")).BindStruct(person{FirstName: "Ada", LastName: "Lovelace", Age: 37}).ExecRelease())
	require.NoError(t, x.Query(personTable.Get("age")).BindStruct(person{FirstName: "Ada", LastName: "Lovelace"}).GetRelease(&got))
	assert.Equal(t, 37, got.Age)
	require.NoError(t, x.Query(personTable.Delete()).BindStruct(people[1]).ExecRelease())
	all = nil
	require.NoError(t, x.Query(qb.Select("app.person").ToCql()).SelectRelease(&all))
	assert.Len(t, all, 1)
}

// downAndUp stops a node and starts it again, checking gocql sees both.
func downAndUp(t *testing.T, c *Cluster, p *recordingPolicy, n *Node, upWithin time.Duration) {
	t.Helper()
	ip := n.IP().String()
	m := p.mark()
	n.Stop()
	eventually(t, 5*time.Second, "HostDown "+ip, func() bool { return p.saw("down", ip, m) })
	m = p.mark()
	require.NoError(t, n.Start())
	eventually(t, upWithin, "HostUp "+ip, func() bool { return p.saw("up", ip, m) })
}

func TestGocqlDiscoversDataPathAndStatus311(t *testing.T) {
	c := startCluster(t, Config{Nodes: 3, Racks: 2, GossipDelay: 100 * time.Millisecond, StopAnnounceDelay: 100 * time.Millisecond})
	p := newRecordingPolicy()
	s := newSession(t, c, p, nil)
	requireDiscovered(t, c, p)
	assert.Equal(t, "rack1", c.Node(0).Rack())
	assert.Equal(t, "rack2", c.Node(1).Rack())
	dataPath(t, s)
	downAndUp(t, c, p, c.Node(2), 5*time.Second)
	assert.Positive(t, c.Selected("system.peers"))
	// The data path still works through the restarted node's re-prepared statements.
	var n int
	require.NoError(t, s.Query("SELECT count(*) FROM app.person").Scan(&n))
	assert.Equal(t, 1, n)

	// A session with a keyspace issues USE on every connection.
	ks := newSession(t, c, newRecordingPolicy(), func(cc *gocql.ClusterConfig) { cc.Keyspace = "app" })
	var first string
	require.NoError(t, ks.Query("SELECT first_name FROM person WHERE first_name = ?", "Ada").Scan(&first))
	assert.Equal(t, "Ada", first)
}

func TestGocqlRelease40UsesPeersV2(t *testing.T) {
	cfg := fastConfig(3)
	cfg.ReleaseVersion = "4.0.13"
	c := startCluster(t, cfg)
	p := newRecordingPolicy()
	// gocql delays its own HostUp by 10 s for 4.0; a short reconnect interval finds the node sooner.
	s := newSession(t, c, p, func(cc *gocql.ClusterConfig) { cc.ReconnectInterval = 300 * time.Millisecond })
	requireDiscovered(t, c, p)
	for _, h := range p.known() {
		assert.Equal(t, "v4.0.13", h.Version().String())
	}
	dataPath(t, s)
	downAndUp(t, c, p, c.Node(1), 5*time.Second)
	assert.Positive(t, c.Selected("system.peers_v2"), "gocql read system.peers_v2")
}

func TestGocqlAuthentication(t *testing.T) {
	cfg := fastConfig(2)
	cfg.Username, cfg.Password = "cassandra", "s3cret"
	c := startCluster(t, cfg)

	p := newRecordingPolicy()
	s := newSession(t, c, p, func(cc *gocql.ClusterConfig) {
		cc.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "s3cret"}
		cc.Compressor = &gocql.SnappyCompressor{}
	})
	requireDiscovered(t, c, p)
	var release string
	require.NoError(t, s.Query("SELECT release_version FROM system.local").Scan(&release))
	assert.Equal(t, "3.11.17", release)

	bad := gocql.NewCluster(c.ContactPoints()...)
	bad.Port = c.Port()
	bad.Timeout, bad.ConnectTimeout = time.Second, time.Second
	bad.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "wrong"}
	bad.Logger = testLogger{t}
	_, err := bad.CreateSession()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Provided username cassandra and/or password are incorrect")

	// New credentials apply to new connections.
	c.SetCredentials("admin", "n3w")
	bad.Authenticator = gocql.PasswordAuthenticator{Username: "admin", Password: "n3w"}
	s2, err := bad.CreateSession()
	require.NoError(t, err)
	bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, s2.Close)
}

func TestGocqlDiscovers100Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("100 listeners")
	}
	c := startCluster(t, fastConfig(100))
	assert.Equal(t, "127.0.0.100", c.Node(99).IP().String())
	p := newRecordingPolicy()
	newSession(t, c, p, func(cc *gocql.ClusterConfig) {
		cc.Hosts = c.ContactPoints()[:1]
	})
	eventually(t, 20*time.Second, "100 hosts", func() bool { return len(p.known()) == 100 })
	requireDiscovered(t, c, p)
	eventually(t, 20*time.Second, "100 pools up", func() bool {
		up := 0
		for _, h := range p.known() {
			if p.saw("up", h.ConnectAddress().String(), 0) {
				up++
			}
		}
		return up == 100
	})
	var ips []string
	for _, h := range p.known() {
		ips = append(ips, h.ConnectAddress().String())
	}
	assert.Len(t, ips, 100)
	assert.Contains(t, strings.Join(ips, ","), "127.0.0.57")
}

// With AuthQuorum, authentication needs a quorum of the nodes up (2 of 3): with one node up
// the answer is Cassandra's transient "Unable to perform authentication", not a rejection.
func TestAuthQuorumUnavailableWhileFewerThanAQuorumAreUp(t *testing.T) {
	cfg := fastConfig(3)
	cfg.Username, cfg.Password, cfg.AuthQuorum = "cassandra", "s3cret", true
	c := startCluster(t, cfg)
	c.Node(1).Stop()
	c.Node(2).Stop()

	gc := gocql.NewCluster(c.Node(0).Addr())
	gc.Port = c.Port()
	gc.Timeout, gc.ConnectTimeout = time.Second, time.Second
	gc.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "s3cret"}
	gc.Logger = testLogger{t}
	gc.DisableInitialHostLookup = true
	_, err := gc.CreateSession()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Unable to perform authentication")

	require.NoError(t, c.Node(1).Start())
	s, err := gc.CreateSession()
	require.NoError(t, err, "2 of 3 up: a quorum")
	bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, s.Close)
}

// gocql v1.7.0 sessions against the simulator's 3.11 and 4.1 releases, negotiating and with
// each version it speaks pinned (gocql v2's rows are in the gocqlv2 module's
// TestSessionsNegotiate, which compiles no package of gocql v1).
func TestGocqlV1SessionsNegotiate(t *testing.T) {
	for i, release := range []string{"3.11.17", "4.1.5"} {
		sim := startCluster(t, Config{Nodes: 2, ReleaseVersion: release, BaseIP: fmt.Sprintf("127.0.%d.1", 46+i)})
		for _, proto := range []int{0, 3, 4} {
			t.Run(fmt.Sprintf("%s_proto%d", release, proto), func(t *testing.T) {
				s := newSession(t, sim, newRecordingPolicy(), func(cfg *gocql.ClusterConfig) { cfg.ProtoVersion = proto })
				var rv string
				require.NoError(t, s.Query("SELECT release_version FROM system.local").Scan(&rv))
				assert.Equal(t, release, rv)
			})
		}
	}
}
