package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// lane is one client program of bench/peers: how to install its driver (into the cache, never
// the checkout) and how to run it. prepare is idempotent and fast once done.
type lane struct {
	Name   string // as the table shows it
	Dir    string // its program under bench/peers
	Driver string // driver and version, as the table shows it
	tools  []string
	// prepare installs the lane's driver and builds its program; run is its command line.
	prepare func(l *lane, env *setup) error
	run     func(l *lane, env *setup) []string
	env     func(s *setup) []string // added to the lane's environment
}

// setup is where lanes are built and installed.
type setup struct {
	peers string // bench/peers in this checkout
	cache string // the peers cache (binaries, target dirs, venvs, node_modules, jars)
}

func (s *setup) path(elem ...string) string {
	return filepath.Join(append([]string{s.cache}, elem...)...)
}

var lanes = []*lane{
	goLane("gocql", "gocql", "gocql v1.7.0"),
	goLane("gocql v2", "gocqlv2", "apache gocql v2.1.2"),
	goLane("cqlcontrol", "cqlcontrol", "gocql v1.7.0 + cqlcontrol (controlconn.New)"),
	goLane("cqlcontrol governed", "cqlcontrol-governed", "gocql v1.7.0 + cqlcontrol + WithDialGovernor"),
	goLane("cqlcontrol governed v2", "cqlcontrol-governed-v2", "apache gocql v2.1.2 + cqlcontrol (gocqlv2.New) + WithDialGovernor"),
	{
		Name: "java", Dir: "java", Driver: "java-driver-core 4.19.2", tools: []string{"java", "mvn"},
		prepare: func(l *lane, s *setup) error {
			lib := s.path("java-lib")
			pom := filepath.Join(s.peers, "java", "pom.xml")
			return once(s, "java-lib", []string{pom}, func() error {
				_ = os.RemoveAll(lib)
				return runQuiet(s.peers, nil, "mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies",
					"-DincludeScope=runtime", "-DoutputDirectory="+lib)
			})
		},
		run: func(l *lane, s *setup) []string {
			return []string{"java", "-cp", s.path("java-lib") + "/*", filepath.Join(s.peers, "java", "Main.java")}
		},
	},
	{
		Name: "rust", Dir: "rust", Driver: "scylla (rust) 1.9.0, tokio", tools: []string{"cargo"},
		prepare: func(l *lane, s *setup) error {
			return runQuiet(filepath.Join(s.peers, "rust"), []string{"CARGO_TARGET_DIR=" + s.path("rust-target")},
				"cargo", "build", "--release", "--locked")
		},
		run: func(l *lane, s *setup) []string { return []string{s.path("rust-target", "release", "peers-rust")} },
	},
	pythonLane("python", "venv-python", "requirements.txt", "cassandra-driver 3.30.1"),
	pythonLane("python (scylla-driver)", "venv-python-scylla", "requirements-scylla.txt", "scylla-driver 3.29.12"),
	{
		Name: "node", Dir: "node", Driver: "cassandra-driver (npm) 4.10.0", tools: []string{"node", "npm"},
		prepare: func(l *lane, s *setup) error {
			dir := s.path("node")
			src := filepath.Join(s.peers, "node")
			return once(s, "node", []string{filepath.Join(src, "package.json"), filepath.Join(src, "package-lock.json")}, func() error {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				for _, f := range []string{"package.json", "package-lock.json"} {
					b, err := os.ReadFile(filepath.Join(src, f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
						return err
					}
				}
				return runQuiet(dir, nil, "npm", "ci", "--no-audit", "--no-fund")
			})
		},
		run: func(l *lane, s *setup) []string {
			return []string{"node", filepath.Join(s.peers, "node", "peers.js")}
		},
		env: func(s *setup) []string { return []string{"NODE_PATH=" + s.path("node", "node_modules")} },
	},
}

// goLane is a Go lane: its program built from this module.
func goLane(name, dir, driver string) *lane {
	return &lane{
		Name: name, Dir: dir, Driver: driver, tools: []string{"go"},
		prepare: func(l *lane, s *setup) error {
			return runQuiet(s.peers, nil, "go", "build", "-o", s.path("bin", l.Dir), "./"+l.Dir)
		},
		run: func(l *lane, s *setup) []string { return []string{s.path("bin", l.Dir)} },
	}
}

// pythonLane is a Python lane: a venv of its own in the cache with req installed (pure Python:
// CASS_DRIVER_NO_CYTHON=1, or the install compiles the driver with Cython for many minutes).
func pythonLane(name, venv, req, driver string) *lane {
	return &lane{
		Name: name, Dir: "python", Driver: driver, tools: []string{"python3"},
		prepare: func(l *lane, s *setup) error {
			reqPath := filepath.Join(s.peers, "python", req)
			return once(s, venv, []string{reqPath}, func() error {
				_ = os.RemoveAll(s.path(venv))
				if err := runQuiet(s.peers, nil, "python3", "-m", "venv", s.path(venv)); err != nil {
					return err
				}
				return runQuiet(s.peers, []string{"CASS_DRIVER_NO_CYTHON=1"}, s.path(venv, "bin", "pip"),
					"install", "--quiet", "--disable-pip-version-check", "-r", reqPath)
			})
		},
		run: func(l *lane, s *setup) []string {
			return []string{s.path(venv, "bin", "python"), filepath.Join(s.peers, "python", "peers.py")}
		},
	}
}

// missingTool returns the first of l's tools not on PATH, or "".
func (l *lane) missingTool() string {
	for _, t := range l.tools {
		if _, err := exec.LookPath(t); err != nil {
			return t
		}
	}
	return ""
}

// once runs do unless it already succeeded for the current contents of inputs (a stamp file
// in the cache holds their hash).
func once(s *setup, name string, inputs []string, do func() error) error {
	h := sha256.New()
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			return err
		}
		h.Write(b)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	stamp := s.path("stamps", name)
	if b, err := os.ReadFile(stamp); err == nil && string(b) == sum {
		return nil
	}
	if err := do(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(sum), 0o644)
}

// runQuiet runs a command in dir, its output kept for the error only.
func runQuiet(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, lastLines(out.String(), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
