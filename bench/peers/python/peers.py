"""The python lane: the DataStax/Apache Python driver (cassandra-driver, or scylla-driver, which
installs the same package) with its defaults: Cluster(contact_points) and one query pinned to
each host every 25 ms with Session.execute(host=...), one JSON line per host state change."""

import json
import os
import sys
import threading
import time

from cassandra import __version__ as driver_version
from cassandra.cluster import Cluster

lock = threading.Lock()


def emit(**fields):
    with lock:
        print(json.dumps({"ts": int(time.time() * 1000), **fields}), flush=True)


def poll(session, host):
    known, ok, last_err, errors = False, False, "", 0
    while True:
        started = time.monotonic()
        try:
            session.execute("SELECT release_version FROM system.local", host=host)
            msg = ""
        except Exception as e:  # what the application sees, whatever it is
            errors += 1
            msg = f"{type(e).__name__}: {e}"
        if not known or ok != (msg == "") or msg != last_err:
            known, ok, last_err = True, msg == "", msg
            emit(host=host.address, ok=ok, errors=errors, err=msg)
        time.sleep(max(0.0, 0.025 - (time.monotonic() - started)))


def main():
    hosts = os.environ["PEERS_HOSTS"].split(",")
    try:
        session = Cluster(contact_points=hosts).connect()
    except Exception as e:
        emit(event="fatal", err=f"{type(e).__name__}: {e}")
        sys.exit(1)
    emit(event="connected", driver=driver_version)
    by_addr = {h.address: h for h in session.cluster.metadata.all_hosts()}
    for addr in hosts:
        threading.Thread(target=poll, args=(session, by_addr[addr]), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
