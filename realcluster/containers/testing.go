package containers

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// EnvRequired, set to anything, makes StartT fail a test where it would skip it (no Docker API
// engine, no java or mvn): a CI job that is meant to run container tests cannot then pass
// without running them. make containers sets it.
const EnvRequired = "CQLCONTROL_CONTAINERS"

// EnvJREImage names the Java 17 runtime image StartT builds the node image from when
// Config.JREImage is empty (make containers imports one of its own and names it here); without
// it, Start's default, DefaultJREImage.
const EnvJREImage = "CQLCONTROL_JRE_IMAGE"

// StartT starts a cluster for a test: it skips the test, saying why, where no Docker API engine
// answers or java or mvn is missing (Resolve needs them), and fails it instead when EnvRequired
// is set; it fails the test where they exist and Cassandra does not start. Every container is
// removed when the test ends, also when it fails; the working directory is kept (and named in
// the log) when the test failed, for its node*/logs/system.log.
func StartT(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if err := realcluster.LookTools(); err != nil {
		unavailable(t, err)
	}
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	if cfg.JREImage == "" {
		cfg.JREImage = os.Getenv(EnvJREImage)
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "cqlcontrol-containers-")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Dir = dir
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("containers: kept %s (node logs under node*/logs)", dir)
				return
			}
			_ = os.RemoveAll(dir)
		})
	}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		if errors.Is(err, ErrNoEngine) || errors.Is(err, realcluster.ErrMissingTool) {
			unavailable(t, err)
		}
		t.Fatalf("Cassandra containers did not start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("containers: close: %v", err)
		}
	})
	return c
}

// unavailable skips t, or fails it when EnvRequired is set.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(EnvRequired) != "" {
		t.Fatalf("Cassandra containers not available here: %v (%s is set: they must run)", err, EnvRequired)
	}
	t.Skipf("Cassandra containers not available here: %v", err)
}
