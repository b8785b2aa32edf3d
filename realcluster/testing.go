package realcluster

import (
	"context"
	"errors"
	"os"
	"testing"
)

// EnvReal is the environment variable that turns on the real-Cassandra suites of this
// repository (make real sets it): they take minutes and two cores, so `go test ./...` skips
// them unless it is set.
const EnvReal = "CQLCONTROL_REAL"

// StartT starts a cluster for a test: it skips the test, saying why, where java or mvn is
// missing; it fails the test (never skips) where they exist and Cassandra does not resolve or
// start. The cluster is closed when the test ends, every JVM killed, also when the test fails
// or panics; the working directory is kept (and named in the log) when the test failed, for
// its system.log files.
func StartT(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if err := LookTools(); err != nil {
		t.Skipf("real Cassandra not available here: %v", err)
	}
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "cqlcontrol-realcluster-")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Dir = dir
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("realcluster: kept %s (node logs under node*/logs)", dir)
				return
			}
			_ = os.RemoveAll(dir)
		})
	}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		if errors.Is(err, ErrMissingTool) {
			t.Skipf("real Cassandra not available here: %v", err)
		}
		t.Fatalf("real Cassandra did not start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("realcluster: close: %v", err)
		}
	})
	return c
}

// RequireReal skips t unless EnvReal is set, saying how to run it.
func RequireReal(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvReal) == "" {
		t.Skipf("real Cassandra suite: set %s=1 or run make real", EnvReal)
	}
}
