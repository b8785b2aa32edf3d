// The node lane: the Node.js cassandra-driver 4.10 with its defaults (contactPoints, and the
// localDataCenter its default load-balancing policy requires with them), one query pinned to
// each host every 25 ms with the execute option `host`, one JSON line per host state change.
'use strict';
const cassandra = require('cassandra-driver');

const emit = (fields) => console.log(JSON.stringify({ ts: Date.now(), ...fields }));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function poll(client, host) {
  let known = false, ok = false, lastErr = '', errors = 0;
  for (;;) {
    const started = Date.now();
    let msg = '';
    try {
      await client.execute('SELECT release_version FROM system.local', [], { host });
    } catch (e) {
      errors++;
      msg = `${e.name}: ${e.message}`;
    }
    if (!known || ok !== (msg === '') || msg !== lastErr) {
      known = true; ok = msg === ''; lastErr = msg;
      emit({ host: host.address.split(':')[0], ok, errors, err: msg });
    }
    await sleep(Math.max(0, 25 - (Date.now() - started)));
  }
}

async function main() {
  const hosts = process.env.PEERS_HOSTS.split(',');
  const client = new cassandra.Client({ contactPoints: hosts, localDataCenter: process.env.PEERS_DC });
  try {
    await client.connect();
  } catch (e) {
    emit({ event: 'fatal', err: `${e.name}: ${e.message}` });
    process.exit(1);
  }
  emit({ event: 'connected', driver: cassandra.version });
  const byAddr = new Map(client.hosts.values().map((h) => [h.address.split(':')[0], h]));
  await Promise.all(hosts.map((addr) => poll(client, byAddr.get(addr))));
}

main();
