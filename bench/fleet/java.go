package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// The java lane: the Apache Cassandra Java driver 4.19.2 (bench/peers/java/pom.xml, the same
// driver as make peers' java lane) with its defaults, as the peer anchor. Its workers are JVMs
// running java/FleetWorker.java on the JDK's source launcher, each holding its share of the
// fleet's CqlSessions and speaking the Go worker's line protocol.
const javaLane = "java"

// javaDC is the datacenter the Java driver requires with contact points: realcluster's nodes
// run SimpleSnitch, whose datacenter is "datacenter1".
const javaDC = "datacenter1"

// Where the java lane's sources are, from bench/fleet (make fleet runs there).
var (
	javaWorkerSrc = filepath.Join("java", "FleetWorker.java")
	javaPOM       = filepath.Join("..", "peers", "java", "pom.xml")
)

// javaRuntime is what a java worker runs: the driver's jars and the worker's source.
type javaRuntime struct{ lib, src string }

// prepareJava makes the Java driver's jars available under the cache (realcluster.CacheDir,
// never the checkout), running Maven the first time.
func prepareJava() (javaRuntime, error) {
	var none javaRuntime
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return none, fmt.Errorf("the java lane needs %s on PATH (a JDK 17 and Maven)", tool)
		}
	}
	for _, f := range []string{javaWorkerSrc, javaPOM} {
		if _, err := os.Stat(f); err != nil {
			return none, fmt.Errorf("the java lane runs from bench/fleet: %w", err)
		}
	}
	src, err := filepath.Abs(javaWorkerSrc)
	if err != nil {
		return none, err
	}
	pom, err := filepath.Abs(javaPOM)
	if err != nil {
		return none, err
	}
	cache, err := realcluster.CacheDir()
	if err != nil {
		return none, err
	}
	lib := filepath.Join(cache, "fleet", "java-lib")
	if jars, _ := filepath.Glob(filepath.Join(lib, "java-driver-core-*.jar")); len(jars) > 0 {
		return javaRuntime{lib, src}, nil
	}
	fmt.Fprintf(os.Stderr, "java lane: fetching the Java driver into %s\n", lib)
	tmp := lib + ".tmp"
	_ = os.RemoveAll(tmp)
	cmd := exec.Command("mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return none, fmt.Errorf("java lane: mvn dependency:copy-dependencies: %w: %s", err, strings.TrimSpace(out.String()))
	}
	if err := os.Rename(tmp, lib); err != nil {
		return none, err
	}
	return javaRuntime{lib, src}, nil
}

// workerCmd is the command of one java worker of n clients.
func (j javaRuntime) workerCmd(hosts []string, port, n int, waitEvery, serveEvery time.Duration) *exec.Cmd {
	return exec.Command("java", "-cp", filepath.Join(j.lib, "*"), j.src,
		strings.Join(hosts, ","), strconv.Itoa(port), strconv.Itoa(n),
		strconv.FormatInt(waitEvery.Milliseconds(), 10), strconv.FormatInt(serveEvery.Milliseconds(), 10),
		user, password, javaDC)
}
