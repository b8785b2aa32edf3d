package realcluster

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
)

// jvm17Flags are the options Cassandra 5.0's conf/jvm17-server.options gives a JDK 17 server:
// G1, the module exports and opens Cassandra's reflection needs (without them start-up fails
// on the first inaccessible class), attaching to itself (jamm), and Netty's allocator settings.
var jvm17Flags = []string{
	"-XX:+UseG1GC",
	"-XX:+ParallelRefProcEnabled",
	"-XX:MaxTenuringThreshold=1",
	"-XX:G1HeapRegionSize=16m",
	"-XX:G1RSetUpdatingPauseTimePercent=5",
	"-XX:MaxGCPauseMillis=300",
	"-XX:InitiatingHeapOccupancyPercent=70",
	"-Djdk.attach.allowAttachSelf=true",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
	"--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
	"--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"-Dio.netty.tryReflectionSetAccessible=true",
	"-Dio.netty.allocator.useCacheForAllThreads=true",
	"-Dio.netty.allocator.maxOrder=11",
}

// moduleFlags are the --add-exports and --add-opens pairs of jvm17Flags, which Cassandra's
// tools (nodetool) need as the server does.
func moduleFlags() []string {
	var out []string
	for i := 0; i < len(jvm17Flags); i++ {
		if f := jvm17Flags[i]; (f == "--add-exports" || f == "--add-opens") && i+1 < len(jvm17Flags) {
			out = append(out, f, jvm17Flags[i+1])
			i++
		}
	}
	return out
}

// markerProp tags every JVM this package starts with its node directory, so that a later run
// can find and end one that outlived its test process (see sweepOrphans).
const markerProp = "-Dcqlcontrol.realcluster="

// ownerProp names the pid of the process that started the JVM.
const ownerProp = "-Dcqlcontrol.realcluster.owner="

// jvmArgs is the command line of node n: a small heap, JMX on a local-only port (nodetool
// works, nothing listens beyond loopback; com.sun.management.jmxremote.port is never set, as
// Cassandra aborts start-up on it), and the daemon in the foreground.
func (c *Cluster) jvmArgs(n *Node) ([]string, error) {
	jamm, err := c.inst.jar("jamm-")
	if err != nil {
		return nil, err
	}
	return c.jvmArgsWith(n, jamm, c.inst.Lib), nil
}

// jvmArgsWith is jvmArgs with the jamm agent's jar and the jar directory as the JVM sees them
// (inside a container, say).
func (c *Cluster) jvmArgsWith(n *Node, jamm, lib string) []string {
	heap := fmt.Sprintf("%dm", c.cfg.HeapMB)
	args := []string{
		"-Xms" + heap, "-Xmx" + heap, "-Xss256k",
		"-XX:MaxDirectMemorySize=256m", "-XX:ReservedCodeCacheSize=96m",
		"-XX:+HeapDumpOnOutOfMemoryError", "-XX:HeapDumpPath=" + filepath.Join(n.dir, "logs"),
	}
	args = append(args, jvm17Flags...)
	args = append(args,
		"-javaagent:"+jamm,
		"-Dcassandra.config=file://"+filepath.Join(n.dir, "conf", "cassandra.yaml"),
		"-Dlogback.configurationFile=file://"+filepath.Join(n.dir, "conf", "logback.xml"),
		"-Dcassandra.logdir="+filepath.Join(n.dir, "logs"),
		"-Dcassandra.storagedir="+filepath.Join(n.dir, "data"),
		"-Dcassandra-foreground=yes",
		fmt.Sprintf("-Dcassandra.jmx.local.port=%d", n.JMXPort()),
		markerProp+n.dir,
		fmt.Sprintf("%s%d", ownerProp, os.Getpid()),
	)
	if c.cfg.SuperuserSetupDelay > 0 {
		args = append(args, fmt.Sprintf("-Dcassandra.superuser_setup_delay_ms=%d", c.cfg.SuperuserSetupDelay.Milliseconds()))
	}
	args = append(args, c.cfg.JVMOptions...)
	return append(args, "-cp", filepath.Join(lib, "*"), "org.apache.cassandra.service.CassandraDaemon")
}

// token is node i's initial token of n: the Murmur3 range split evenly, as ccm balances it.
func token(i, n int) string {
	span := new(big.Int).Lsh(big.NewInt(1), 64)
	t := new(big.Int).Mul(span, big.NewInt(int64(i)))
	t.Div(t, big.NewInt(int64(n)))
	t.Sub(t, new(big.Int).Lsh(big.NewInt(1), 63))
	return t.String()
}

// midToken is the token halfway between a and b (both decimal Murmur3 tokens, a < b), or
// halfway between a and the end of the ring when there is one node.
func midToken(a, b string) string {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	if y.Cmp(x) <= 0 {
		y = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 63), big.NewInt(1))
	}
	return new(big.Int).Rsh(new(big.Int).Add(x, y), 1).String()
}

// writeConf writes node n's cassandra.yaml and logback.xml.
func (c *Cluster) writeConf(n *Node, bootstrap bool) error {
	d := func(sub string) string { return filepath.Join(n.dir, "data", sub) }
	seeds := make([]string, 0, len(c.nodes))
	for _, m := range c.nodes {
		if m.seed {
			seeds = append(seeds, m.ip)
		}
	}
	auth := "AllowAllAuthenticator"
	authz := "AllowAllAuthorizer"
	if c.cfg.PasswordAuth {
		auth, authz = "PasswordAuthenticator", "CassandraAuthorizer"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_name: %q\n", c.cfg.ClusterName)
	fmt.Fprintf(&b, "num_tokens: 1\ninitial_token: %s\n", n.token)
	b.WriteString("partitioner: org.apache.cassandra.dht.Murmur3Partitioner\n")
	fmt.Fprintf(&b, "data_file_directories: [%q]\n", d("data"))
	for _, kv := range [][2]string{{"commitlog_directory", "commitlog"}, {"saved_caches_directory", "saved_caches"},
		{"hints_directory", "hints"}, {"cdc_raw_directory", "cdc_raw"}} {
		fmt.Fprintf(&b, "%s: %q\n", kv[0], d(kv[1]))
	}
	b.WriteString("commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n")
	fmt.Fprintf(&b, "seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: %q\n", strings.Join(seeds, ","))
	fmt.Fprintf(&b, "listen_address: %s\nrpc_address: %s\n", n.ip, n.ip)
	fmt.Fprintf(&b, "storage_port: %d\nnative_transport_port: %d\n", c.cfg.StoragePort, c.cfg.Port)
	b.WriteString("endpoint_snitch: SimpleSnitch\nstart_native_transport: true\n")
	fmt.Fprintf(&b, "auto_bootstrap: %v\n", bootstrap)
	fmt.Fprintf(&b, "authenticator: %s\nauthorizer: %s\n", auth, authz)
	// Small machines: one compactor, no key cache to warm, no UDF threads.
	b.WriteString("concurrent_compactors: 1\nkey_cache_size: 0MiB\n")
	if c.cfg.TLS != nil {
		y, err := c.tlsYAML(n, "")
		if err != nil {
			return err
		}
		b.WriteString(y)
	}
	for _, line := range c.cfg.YAML {
		b.WriteString(line + "\n")
	}
	if err := os.WriteFile(filepath.Join(n.dir, "conf", "cassandra.yaml"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	logback := `<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>` + filepath.Join(n.dir, "logs", "system.log") + `</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{20} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
`
	return os.WriteFile(filepath.Join(n.dir, "conf", "logback.xml"), []byte(logback), 0o644)
}
