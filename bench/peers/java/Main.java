// The java lane: the Apache Cassandra Java driver 4.19 with its defaults (the contact points and
// the local datacenter it requires with them), one query pinned to each host every 25 ms with
// Statement.setNode, one JSON line per host state change on stdout.

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.metadata.Node;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

public class Main {
  static synchronized void emit(String fields) {
    System.out.println("{\"ts\":" + System.currentTimeMillis() + "," + fields + "}");
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

  static void poll(CqlSession session, String host, Node node) {
    SimpleStatement stmt = SimpleStatement.newInstance("SELECT release_version FROM system.local").setNode(node);
    boolean known = false, ok = false;
    String lastErr = "";
    long errors = 0;
    while (true) {
      long started = System.nanoTime();
      String msg = "";
      try {
        session.execute(stmt);
      } catch (RuntimeException e) {
        errors++;
        msg = e.getClass().getSimpleName() + ": " + e.getMessage();
      }
      if (!known || ok != msg.isEmpty() || !msg.equals(lastErr)) {
        known = true;
        ok = msg.isEmpty();
        lastErr = msg;
        emit("\"host\":" + json(host) + ",\"ok\":" + ok + ",\"errors\":" + errors + ",\"err\":" + json(msg));
      }
      long left = 25 - (System.nanoTime() - started) / 1_000_000;
      if (left > 0) {
        try {
          Thread.sleep(left);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    String[] hosts = System.getenv("PEERS_HOSTS").split(",");
    CqlSession session;
    try {
      var builder = CqlSession.builder().withLocalDatacenter(System.getenv("PEERS_DC"));
      for (String h : hosts) builder.addContactPoint(new InetSocketAddress(h, 9042));
      session = builder.build();
    } catch (RuntimeException e) {
      emit("\"event\":\"fatal\",\"err\":" + json(e.toString()));
      System.exit(1);
      return;
    }
    emit("\"event\":\"connected\"");
    List<Thread> threads = new ArrayList<>();
    for (String h : hosts) {
      Node node = session.getMetadata().getNodes().values().stream()
          .filter(n -> ((InetSocketAddress) n.getEndPoint().resolve()).getAddress().getHostAddress().equals(h))
          .findFirst().orElseThrow();
      Thread t = new Thread(() -> poll(session, h, node));
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) t.join();
  }
}
