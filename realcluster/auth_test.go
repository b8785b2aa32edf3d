package realcluster

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateRoleCQL(t *testing.T) {
	assert.Equal(t, `CREATE ROLE IF NOT EXISTS "fleet" WITH PASSWORD = 'it''s' AND LOGIN = true AND SUPERUSER = false`,
		createRoleCQL(Role{Name: "fleet", Password: "it's"}))
	assert.Equal(t, `CREATE ROLE IF NOT EXISTS "f" WITH HASHED PASSWORD = '$2a$12$x' AND LOGIN = true AND SUPERUSER = true`,
		createRoleCQL(Role{Name: "f", HashedPassword: "$2a$12$x", Superuser: true}))
	err := Config{Roles: []Role{{Name: "f", Password: "p"}}}.withDefaults().validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PasswordAuth")
}

func TestAuthTasksParsesTpstats(t *testing.T) {
	out := `Pool Name                         Active Pending Completed Blocked All time blocked
Native-Transport-Requests              0       0       1234       0                0
Native-Transport-Auth-Requests         1       0         57       0                0
`
	n, err := authTasks(out)
	require.NoError(t, err)
	assert.Equal(t, int64(57), n)
	n, err = authTasks("Pool Name Active Pending Completed\nReadStage 0 0 3 0 0\n")
	require.NoError(t, err, "no auth row yet: no login handled")
	assert.Zero(t, n)
	_, err = authTasks("nodetool: Failed to connect")
	require.Error(t, err)
	v, ok := lastInt("Picked up JAVA_TOOL_OPTIONS\n  12\n")
	assert.True(t, ok)
	assert.Equal(t, int64(12), v)
}

// fleetHash12 is a bcrypt hash of "fleet-pw" at cost 12.
const fleetHash12 = "$2a$12$dCOew3KuBv3Ee6jJoIJJhO4pXbVrZp53KUaPD6SPQQ4ZCR4XQiVLa"

func TestParseStat(t *testing.T) {
	// A thread of a JVM: the command name has a space and a digit, and a ')' could be in it.
	comm, cpu := parseStat([]byte("4242 (C2 CompilerThre) S 4200 4200 4200 0 -1 4194368 100 0 0 0 1234 56 0 0 20 0 40 0 100 0 0"))
	assert.Equal(t, "C2 CompilerThre", comm)
	assert.Equal(t, 12900*time.Millisecond, cpu, "utime 1234 + stime 56 ticks of 10 ms")
	comm, cpu = parseStat([]byte("7 (a) b) R 1 2 3 4 5 6 7 8 9 10 300 200 0"))
	assert.Equal(t, "a) b", comm, "the last ')' ends the name")
	assert.Equal(t, 5*time.Second, cpu)
	_, cpu = parseStat([]byte("7 (short) R 1 2"))
	assert.Zero(t, cpu, "a truncated line counts nothing")
	comm, cpu = parseStat([]byte("garbage"))
	assert.Empty(t, comm)
	assert.Zero(t, cpu)
}

// Roles, login counters and the native transport's off and on, on one real node.
func TestRealRolesLoginsAndBinary(t *testing.T) {
	RequireReal(t)
	c := StartT(t, Config{Nodes: 1, BaseIP: "127.0.0.111", PasswordAuth: true, SuperuserSetupDelay: 500 * time.Millisecond,
		Roles: []Role{{Name: "fleet", Password: "fleet-pw"}, {Name: "fleet12", HashedPassword: fleetHash12}}})
	ctx := context.Background()
	before, err := c.Logins(ctx, 0)
	require.NoError(t, err)
	login := func(user, pw string) (time.Duration, error) {
		cfg := gocql.NewCluster(c.Node(0).IP())
		cfg.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: pw}
		cfg.DisableInitialHostLookup, cfg.NumConns = true, 1
		cfg.Timeout, cfg.ConnectTimeout = 10*time.Second, 10*time.Second
		begin := time.Now()
		s, err := cfg.CreateSession()
		if err != nil {
			return 0, err
		}
		s.Close()
		return time.Since(begin), nil
	}
	for _, r := range [][2]string{{"fleet", "fleet-pw"}, {"fleet12", "fleet-pw"}} {
		took, err := login(r[0], r[1])
		require.NoError(t, err, "role %s logs in", r[0])
		t.Logf("FIGURE session of role %s (one control connection and one pool connection) in %v", r[0], took.Round(time.Millisecond))
	}
	_, err = login("fleet", "wrong")
	require.Error(t, err, "a wrong password is refused")
	after, err := c.Logins(ctx, 0)
	require.NoError(t, err)
	t.Logf("logins before %+v after %+v", before, after)
	// Two sessions of two connections each, and one refused connection at least.
	assert.GreaterOrEqual(t, after.AuthTasks-before.AuthTasks, int64(5), "the auth executor handled every login")
	require.NotEqual(t, int64(-1), after.Success, "ClientMetrics read over JMX")
	assert.GreaterOrEqual(t, after.Success-before.Success, int64(4))
	assert.GreaterOrEqual(t, after.Failure-before.Failure, int64(1))

	require.NoError(t, c.DisableBinary(ctx, 0))
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	require.Error(t, AnswersCQL(hctx, c.Node(0).Addr()), "the native transport is off")
	cancel()
	at, err := c.EnableBinary(ctx, 0)
	require.NoError(t, err)
	assert.False(t, at.IsZero())
	assert.Positive(t, c.Node(0).CPU(), "the JVM's CPU time")
	jit := c.Node(0).JITCPU()
	assert.Positive(t, jit, "the JIT compiler threads' CPU time (a JVM that served logins compiled bcrypt)")
	assert.Less(t, jit, c.Node(0).CPU(), "the compiler threads are part of the JVM")
}
