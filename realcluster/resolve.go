package realcluster

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

//go:embed pom.xml
var pom []byte

// DefaultVersion is the Cassandra release Resolve fetches when none is asked for: the newest
// 5.0 release seen on Maven Central when this package was written.
const DefaultVersion = "5.0.8"

// ErrMissingTool is returned (wrapped) when java or mvn is not on PATH: a test should skip,
// saying so, rather than fail (see Skip).
var ErrMissingTool = errors.New("realcluster: tool not found")

var versionRE = regexp.MustCompile(`^5\.0\.[0-9]+$`)

// Installation is a resolved Cassandra: the directory holding cassandra-all and every runtime
// dependency, as Maven copied them.
type Installation struct {
	Version string
	Lib     string // the jars; the JVM's class path is Lib/*
}

// jar returns the path of the jar in Lib whose name starts with prefix ("jamm-").
func (in Installation) jar(prefix string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(in.Lib, prefix+"*.jar"))
	if len(m) == 0 {
		return "", fmt.Errorf("realcluster: no %s*.jar in %s", prefix, in.Lib)
	}
	return m[0], nil
}

// CacheDir is where Resolve keeps Cassandra between runs: $CQLCONTROL_CACHE if set, else
// cqlcontrol/ under the user's cache directory (~/.cache on Linux), never inside a checkout.
func CacheDir() (string, error) {
	if d := os.Getenv("CQLCONTROL_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("realcluster: no cache directory (set CQLCONTROL_CACHE): %w", err)
	}
	return filepath.Join(d, "cqlcontrol"), nil
}

// LookTools checks that java and mvn are on PATH; the error wraps ErrMissingTool.
func LookTools() error {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s is not on PATH (install a JDK 17 and Maven to run real Cassandra)", ErrMissingTool, tool)
		}
	}
	return nil
}

// Resolve makes Cassandra version (DefaultVersion when empty) available under CacheDir,
// running `mvn dependency:copy-dependencies` on the POM this package embeds the first time and
// reusing the result after that. Concurrent callers (test packages run in parallel) take a file
// lock, so Maven runs once. Maven's failure is returned as one line: its first [ERROR].
func Resolve(version string) (Installation, error) {
	if version == "" {
		version = DefaultVersion
	}
	if !versionRE.MatchString(version) {
		return Installation{}, fmt.Errorf("realcluster: Cassandra version %q not supported (5.0.x: the JVM flags are 5.0's)", version)
	}
	if err := LookTools(); err != nil {
		return Installation{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return Installation{}, err
	}
	dir := filepath.Join(cache, "cassandra-"+version)
	in := Installation{Version: version, Lib: filepath.Join(dir, "lib")}
	done := filepath.Join(dir, ".resolved")
	if _, err := os.Stat(done); err == nil {
		return in, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Installation{}, fmt.Errorf("realcluster: cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Installation{}, fmt.Errorf("realcluster: cache lock: %w", err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Installation{}, fmt.Errorf("realcluster: cache lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	if _, err := os.Stat(done); err == nil {
		return in, nil // another process resolved it while we waited
	}
	pomPath := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pomPath, pom, 0o644); err != nil {
		return Installation{}, fmt.Errorf("realcluster: cache: %w", err)
	}
	_ = os.RemoveAll(in.Lib)
	cmd := exec.Command("mvn", "-B", "-q", "-f", pomPath, "-Dcassandra.version="+version,
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+in.Lib)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Installation{}, fmt.Errorf("realcluster: mvn could not resolve org.apache.cassandra:cassandra-all:%s: %s", version, mavenError(out.String(), err))
	}
	if _, err := in.jar("cassandra-all-"); err != nil {
		return Installation{}, err
	}
	if err := os.WriteFile(done, []byte(version+"\n"), 0o644); err != nil {
		return Installation{}, fmt.Errorf("realcluster: cache: %w", err)
	}
	return in, nil
}

// mavenError is the first line Maven marked [ERROR], without its colour codes, or err.
func mavenError(out string, err error) string {
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for _, line := range strings.Split(ansi.ReplaceAllString(out, ""), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "[ERROR]"); ok && strings.TrimSpace(rest) != "" {
			return strings.TrimSpace(rest)
		}
	}
	return err.Error()
}
