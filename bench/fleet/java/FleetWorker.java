// The java lane of the fleet (docs/fleet.md): one worker process holding n sessions of the
// Apache Cassandra Java driver 4.19 with its defaults, plus what the fleet needs: its
// credentials, the local datacenter the driver requires with contact points, the fleet's nodes
// as the only ones it uses (the Go lanes' HostFilter), a 5 s query timeout (the Go lanes'
// context) and the driver's own connection-init error counter. It speaks the Go worker's line
// protocol (worker.go): on stdin "down", "ready", "mark", "report", "live", "quit"; on stdout
// one JSON object a line ("up", "serving", "live", "report").
//
// Args: hosts (comma-separated) port n wait-every-ms serve-every-ms user password datacenter.
//
// The Java driver has no hook on each connection setup (gocql's ConnectObserver), so the report's
// setups are what it does expose: "ok" is the connections the sessions hold when the
// coordinator reads the server's login counters (on one node every one of them was set up after
// the fault), "failed" the driver's connection-init errors since "down" (timeouts among them),
// and the per-second series are the growth of the open connections and of those errors,
// sampled every 500 ms.

import com.codahale.metrics.Counting;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.loadbalancing.NodeDistance;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metrics.DefaultNodeMetric;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

public class FleetWorker {
  static final SimpleStatement QUERY =
      SimpleStatement.newInstance("SELECT release_version FROM system.local").setTimeout(Duration.ofSeconds(5));

  static synchronized void emit(String line) {
    System.out.println(line);
    System.out.flush();
  }

  static String json(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static void countAt(List<Long> s, int i, long v) {
    while (s.size() <= i) s.add(0L);
    s.set(i, s.get(i) + v);
  }

  static long nowNanos() {
    Instant t = Instant.now();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  /** One client: its session, its first success after "down", its last, its longest gap. */
  static final class Member {
    volatile CqlSession session;
    final AtomicLong firstOK = new AtomicLong(), lastOK = new AtomicLong(), maxGap = new AtomicLong();
    volatile String lastErr = "";
    volatile boolean live; // its latest query succeeded

    void succeeded(long now, long down) {
      long last = lastOK.getAndSet(now);
      if (down != 0 && last != 0 && now > down && now - last > maxGap.get()) maxGap.set(now - last);
    }

    long gapAt(long now) {
      long g = maxGap.get(), last = lastOK.get();
      return last != 0 && now - last > g ? now - last : g;
    }
  }

  static boolean isFleetNode(Node node, Set<String> fleet) {
    Object addr = node.getEndPoint().resolve();
    return addr instanceof InetSocketAddress
        && fleet.contains(((InetSocketAddress) addr).getAddress().getHostAddress());
  }

  static CqlSession connect(List<String> hosts, int port, String user, String password, String dc) {
    Set<String> fleet = Set.copyOf(hosts);
    var config = DriverConfigLoader.programmaticBuilder()
        .withStringList(DefaultDriverOption.METRICS_NODE_ENABLED, List.of("errors.connection.init"))
        .build();
    var b = CqlSession.builder().withConfigLoader(config).withLocalDatacenter(dc)
        .withAuthCredentials(user, password)
        .withNodeDistanceEvaluator((node, localDc) -> isFleetNode(node, fleet) ? null : NodeDistance.IGNORED);
    for (String h : hosts) b.addContactPoint(new InetSocketAddress(h, port));
    return b.build();
  }

  /** The connections the session holds to the fleet's nodes, and its connection-init errors. */
  static long[] connections(CqlSession s) {
    long open = 0, initErrors = 0;
    var metrics = s.getMetrics();
    for (Node n : s.getMetadata().getNodes().values()) {
      open += n.getOpenConnections();
      if (metrics.isPresent()) {
        var m = metrics.get().getNodeMetric(n, DefaultNodeMetric.CONNECTION_INIT_ERRORS);
        if (m.isPresent() && m.get() instanceof Counting) initErrors += ((Counting) m.get()).getCount();
      }
    }
    return new long[] {open, initErrors};
  }

  static long cpuNanos() {
    var os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime()
        : 0;
  }

  public static void main(String[] a) throws Exception {
    if (a.length != 8) {
      System.err.println("usage: FleetWorker hosts port n wait-every-ms serve-every-ms user password datacenter");
      System.exit(2);
    }
    List<String> hosts = List.of(a[0].split(","));
    int port = Integer.parseInt(a[1]), n = Integer.parseInt(a[2]);
    long waitMs = Long.parseLong(a[3]), serveMs = Long.parseLong(a[4]);
    String user = a[5], password = a[6], dc = a[7];
    AtomicBoolean stopping = new AtomicBoolean();

    // Connect the clients two at a time, each retried until it connects (as the Go workers).
    Member[] members = new Member[n];
    ExecutorService starter = Executors.newFixedThreadPool(2);
    for (int i = 0; i < n; i++) {
      Member m = members[i] = new Member();
      starter.submit(() -> {
        while (!stopping.get()) {
          try {
            m.session = connect(hosts, port, user, password, dc);
            return;
          } catch (RuntimeException e) {
            System.err.println("connect: " + e);
            try {
              Thread.sleep(500);
            } catch (InterruptedException ie) {
              return;
            }
          }
        }
      });
    }
    starter.shutdown();
    starter.awaitTermination(1, TimeUnit.DAYS);

    AtomicLong down = new AtomicLong(), failures = new AtomicLong();
    CountDownLatch okOnce = new CountDownLatch(n);
    for (int i = 0; i < n; i++) {
      Member m = members[i];
      long offset = serveMs * i / n; // spread the clients' queries over the serving interval
      Thread t = new Thread(() -> {
        try {
          Thread.sleep(offset);
          boolean first = true;
          while (!stopping.get()) {
            long begin = nowNanos();
            boolean ok;
            try {
              m.session.execute(QUERY);
              ok = true;
            } catch (RuntimeException e) {
              ok = false;
              if (down.get() != 0) {
                failures.incrementAndGet();
                m.lastErr = e.getClass().getSimpleName() + ": " + e.getMessage();
              }
            }
            m.live = ok;
            if (ok) {
              long now = nowNanos(), d = down.get();
              m.succeeded(now, d);
              if (first) {
                first = false;
                okOnce.countDown();
              }
              if (d != 0 && begin > d && m.firstOK.get() == 0) m.firstOK.set(now);
            }
            long every = ok && !(down.get() != 0 && m.firstOK.get() == 0) ? serveMs : waitMs;
            Thread.sleep(every);
          }
        } catch (InterruptedException e) {
          // stopping
        }
      });
      t.setDaemon(true);
      t.start();
    }
    okOnce.await();
    emit("{\"ev\":\"up\"}");

    long cpu0 = 0, initErrors0 = 0, openAtMark = 0;
    List<Long> perSecond = Collections.synchronizedList(new ArrayList<>()),
        okPerSecond = Collections.synchronizedList(new ArrayList<>());
    Thread ticker = null;
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    for (String line; (line = in.readLine()) != null; ) {
      switch (line) {
        case "down": {
          long now = nowNanos();
          initErrors0 = 0;
          for (Member m : members) {
            m.firstOK.set(0);
            m.maxGap.set(0);
            m.lastErr = "";
            initErrors0 += connections(m.session)[1];
          }
          failures.set(0);
          openAtMark = 0;
          down.set(now);
          perSecond.clear();
          okPerSecond.clear();
          ticker = new Thread(() -> {
            long lastOpen = 0, lastErrors = 0;
            for (Member m : members) {
              long[] c = connections(m.session);
              lastOpen += c[0];
              lastErrors += c[1];
            }
            try {
              while (true) {
                Thread.sleep(500);
                int k = 0;
                long open = 0, errors = 0;
                for (Member m : members) {
                  if (m.firstOK.get() != 0) k++;
                  long[] c = connections(m.session);
                  open += c[0];
                  errors += c[1];
                }
                // The seconds' series: connections opened (the growth of those open) and
                // init errors, sampled every 500 ms.
                int sec = (int) ((nowNanos() - now) / 1_000_000_000L);
                long opened = Math.max(0, open - lastOpen), failed = Math.max(0, errors - lastErrors);
                countAt(okPerSecond, sec, opened);
                countAt(perSecond, sec, opened + failed);
                lastOpen = open;
                lastErrors = errors;
                emit("{\"ev\":\"serving\",\"serving\":" + k + "}");
              }
            } catch (InterruptedException e) {
              // report
            }
          });
          ticker.setDaemon(true);
          ticker.start();
          break;
        }
        case "ready":
          cpu0 = cpuNanos();
          break;
        case "live": {
          int k = 0;
          for (Member m : members) if (m.live) k++;
          emit("{\"ev\":\"live\",\"serving\":" + k + "}");
          break;
        }
        case "mark":
          openAtMark = 0;
          for (Member m : members) openAtMark += connections(m.session)[0];
          break;
        case "report": {
          if (ticker != null) {
            ticker.interrupt();
            ticker.join();
          }
          long now = nowNanos(), initErrors = 0;
          StringBuilder first = new StringBuilder(), gaps = new StringBuilder(), unserved = new StringBuilder();
          for (Member m : members) {
            long[] c = connections(m.session);
            initErrors += c[1];
            if (first.length() > 0) {
              first.append(',');
              gaps.append(',');
            }
            first.append(m.firstOK.get());
            gaps.append(m.gapAt(now));
            if (m.firstOK.get() == 0) {
              if (unserved.length() > 0) unserved.append(',');
              unserved.append(json("java: " + c[0] + " connections open; last query error: " + m.lastErr));
            }
          }
          long failed = Math.max(0, initErrors - initErrors0);
          emit("{\"ev\":\"report\",\"report\":{\"first_ok\":[" + first + "],\"setups\":{\"started\":"
              + (openAtMark + failed) + ",\"ok\":" + openAtMark + ",\"failed\":" + failed + ",\"ok_at_read\":"
              + openAtMark + ",\"per_second\":" + perSecond + ",\"ok_per_second\":" + okPerSecond
              + "},\"cpu_ns\":" + (cpuNanos() - cpu0) + ",\"query_failures\":" + failures.get()
              + ",\"max_gap_ns\":[" + gaps + "],\"unserved\":[" + unserved + "]}}");
          down.set(0);
          break;
        }
        case "quit":
          stopping.set(true);
          for (Member m : members) m.session.close();
          System.exit(0);
          break;
        default:
          break;
      }
    }
    stopping.set(true);
    for (Member m : members) m.session.close();
    System.exit(0);
  }
}
