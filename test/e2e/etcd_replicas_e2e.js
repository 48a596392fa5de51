#!/usr/bin/env node
// End-to-end: replicas of `cxds serve` on a shared, real etcd (Debian's etcd-server, started
// here on loopback ports with a temporary data dir), with real proxyless gRPC xDS clients
// (Node @grpc/grpc-js-xds) and real backends (issue 14):
//
//   1. `cxds apply` writes the example mesh to etcd (a broken file first: refused whole, with
//      file:line:field, nothing written); replicas A and B serve it with the same version.
//   2. A client reaches the control plane through one address (a TCP forwarder standing for
//      a Service in front of the replicas, as in front of istiod) that leads to A. A is killed
//      while the client makes calls: the client's xDS stream moves to B and no call fails.
//   3. A change applied to etcd reaches clients of both replicas (A restarted).
//   4. etcd stopped: both replicas stay ready, report the source disconnected (page, metric),
//      and clients keep routing. etcd back, a change applied: both converge on it.
//
//   node test/e2e/etcd_replicas_e2e.js --cxds build/cxds [--base-port 18760]
// Ports base..base+19 on 127.0.0.1. Exit 0 only if every check passed.
'use strict';

const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn, spawnSync } = require('child_process');
const lib = require('../../examples/mesh-client/e2e_lib');

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const CXDS = path.resolve(opt('--cxds', 'build/cxds'));
const BASE = Number(opt('--base-port', '18760'));
const ETCD = BASE, ETCD_PEER = BASE + 1, V1 = BASE + 2, V2 = BASE + 3, V1_MOVED = BASE + 4, FRONT = BASE + 5;
const XDS = { a: BASE + 10, b: BASE + 11 };
const ADMIN = { a: BASE + 15, b: BASE + 16 };
const PREFIX = '/mesh';
const e2e = new lib.E2e(ADMIN.b, 170000);
const check = e2e.check.bind(e2e), until = e2e.until.bind(e2e);

function getFrom(port, p) {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: p, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    }).on('error', () => resolve({ status: 0, body: '', headers: {} })).on('timeout', function () { this.destroy(); });
  });
}
const source = async (replica) => {
  const r = await getFrom(ADMIN[replica], '/debug/config_source');
  return r.status === 200 ? JSON.parse(r.body) : null;
};
const metric = async (replica, name) => {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec((await getFrom(ADMIN[replica], '/metrics')).body);
  return m ? Number(m[1]) : null;
};
const lastVersion = async (replica) => {
  const pushes = JSON.parse((await getFrom(ADMIN[replica], '/debug/push_status')).body || '[]');
  return pushes.length ? pushes[pushes.length - 1].version : null;
};

// `cxds apply|get ...`: exit code and output.
function cxds(...argv) {
  const r = spawnSync(CXDS, [...argv, '--etcd', `127.0.0.1:${ETCD}`, '--prefix', PREFIX], { timeout: 30000 });
  return { code: r.status, out: String(r.stdout), err: String(r.stderr) };
}

function startEtcd(dataDir) {
  const url = `http://127.0.0.1:${ETCD}`, peer = `http://127.0.0.1:${ETCD_PEER}`;
  // setpriv --pdeathsig: etcd dies with this script, even if the script is killed (a ctest
  // timeout), instead of holding the ports.
  const child = e2e.start('etcd', 'setpriv', ['--pdeathsig', 'KILL', 'etcd', '--name=e2e', `--data-dir=${dataDir}`, `--listen-client-urls=${url}`,
    `--advertise-client-urls=${url}`, `--listen-peer-urls=${peer}`, `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=e2e=${peer}`]);
  // Connections made before etcd serves wait for about ten seconds: wait for it to say so.
  return until('etcd to serve', async () => child.log.includes('ready to serve client requests') && child)
    .then(async (c) => { await until('etcd to answer', async () => cxds('get').code === 0); return c; });
}

function startReplica(name) {
  const child = e2e.start(`cxds-${name}`, CXDS, ['serve', '--config-source', `etcd://127.0.0.1:${ETCD}${PREFIX}`,
    '--xds-address', `127.0.0.1:${XDS[name]}`, '--admin-address', `127.0.0.1:${ADMIN[name]}`,
    '--debounce-after', '50ms']);
  return until(`replica ${name} ready`, async () => (await getFrom(ADMIN[name], '/ready')).status === 200 && child);
}

// One address in front of the replicas: each new connection goes to the first that accepts.
function startForwarder(order) {
  const server = net.createServer((down) => {
    down.pause();
    const attempt = (i) => {
      if (i >= order.length) { down.destroy(); return; }
      const up = net.connect(XDS[order[i]], '127.0.0.1');
      up.once('error', () => attempt(i + 1));
      up.once('connect', () => {
        up.removeAllListeners('error');
        up.on('error', () => down.destroy());
        down.on('error', () => up.destroy());
        down.pipe(up).pipe(down);
        down.resume();
      });
    };
    attempt(0);
  });
  server.listen(FRONT, '127.0.0.1');
  return server;
}

// mesh_client.js in the background; resolves to its JSON result.
function clientInBackground(bootstrap, extra) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(lib.HERE, 'mesh_client.js'), ...extra],
      { env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap } });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.on('exit', () => { try { resolve(JSON.parse(out)); } catch (err) { resolve({ ok: 0, errors: -1, out }); } });
  });
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cxds-etcd-e2e-'));
  const config = path.join(dir, 'config');
  fs.mkdirSync(config);
  lib.copyExampleMesh(config, V1, V2);
  for (const [name, port] of [['v1', V1], ['v2', V2], ['v1-moved', V1_MOVED]]) {
    e2e.start(name, process.execPath, [path.join(lib.HERE, '..', 'teaching', 'inventory_server.js'), '--name', name,
      '--port', String(port), '--max-seconds', '175']);
  }
  let etcd = await startEtcd(path.join(dir, 'etcd'));

  // 1. apply: a broken file refuses the whole batch; then the mesh goes in one transaction.
  const broken = path.join(dir, 'broken');
  fs.mkdirSync(broken);
  lib.copyExampleMesh(broken, V1, V2);
  fs.appendFileSync(path.join(broken, 'routing.yaml'), '---\napiVersion: networking.istio.io/v1\nkind: VirtualService\n' +
    'metadata: {name: bad}\nspec:\n  hosts: [bad.mesh.local]\n  http:\n  - route:\n    - destination: {host: bad.mesh.local}\n      weight: -1\n');
  const refused = cxds('apply', '-f', broken);
  check(refused.code === 1 && /routing\.yaml:\d+: VirtualService default\/bad: spec\.http\[0\]\.route\[0\]\.weight: /.test(refused.err),
    'cxds apply refuses a batch with an invalid document, naming file:line:field', refused.err.split('\n')[0]);
  check(/0 objects at revision/.test(cxds('get').out), 'nothing was written by the refused apply');
  const dry = cxds('apply', '-f', config, '--dry-run');
  check(dry.code === 0 && /dry run: 8 of 8 documents would be written/.test(dry.out) && /0 objects at revision/.test(cxds('get').out),
    'cxds apply --dry-run writes nothing', dry.out.trim().split('\n').pop());
  const applied = cxds('apply', '-f', config);
  check(applied.code === 0 && /applied 8 documents in one transaction/.test(applied.out), 'cxds apply writes the mesh', applied.out.trim().split('\n').pop());
  const removed = cxds('delete', 'Sidecar', 'shop/default');
  const listed = cxds('get').out;
  check(removed.code === 0 && !/Sidecar/.test(listed) && /7 objects/.test(listed), 'cxds delete removes one object', removed.out.trim());
  check(cxds('delete', 'Sidecar', 'shop/default').code === 1, 'cxds delete of an absent object exits 1');
  const again = cxds('apply', '-f', config);
  check(again.code === 0 && /create \/mesh\/Sidecar\/shop\/default/.test(again.out) && /applied 1 documents/.test(again.out),
    'a second apply writes only what is missing', again.out.trim().split('\n').pop());

  await startReplica('a');
  await startReplica('b');
  const [va, vb] = [await lastVersion('a'), await lastVersion('b')];
  check(va !== null && va === vb, 'both replicas serve the same version', { a: va, b: vb });

  // 2. Failover through one front address: kill A mid-calls.
  const forwarder = startForwarder(['a', 'b']);
  const front = lib.bootstrap(path.join(dir, 'front.json'), FRONT, 'grpc-front-1', 'default');
  const calls = clientInBackground(front, ['--calls', '150', '--interval-ms', '60', '--deadline-ms', '5000']);
  // Killed only once the client holds its whole config from A (every type ACKed): calls
  // made before the client has any config cannot succeed whatever the control plane does.
  const syncedOnA = async () => (JSON.parse((await getFrom(ADMIN.a, '/debug/syncz')).body || '[]')).some((s) =>
    s.node === 'grpc-front-1' && s.types.length === 4 && s.types.every((t) => t.status === 'SYNCED'));
  await until('the front client synced on replica A', syncedOnA);
  const replicaA = e2e.children.find((c) => c.spawnargs.includes(`127.0.0.1:${XDS.a}`));
  replicaA.kill('SIGKILL');
  const onB = async () => (JSON.parse((await getFrom(ADMIN.b, '/debug/syncz')).body || '[]')).some((s) => s.node === 'grpc-front-1');
  await until('the front client to re-attach to replica B', onB);
  check(true, 'after replica A was killed the client\'s xDS stream re-attached to replica B');
  const during = await calls;
  check(during.ok === 150 && during.errors === 0, 'no call failed across the failover', { ok: during.ok, errors: during.errors, first_error: during.first_error });

  // 3. A change in etcd reaches clients of both replicas (A back).
  await startReplica('a');
  const direct = { a: lib.bootstrap(path.join(dir, 'a.json'), XDS.a, 'grpc-a-1', 'default'),
    b: lib.bootstrap(path.join(dir, 'b.json'), XDS.b, 'grpc-b-1', 'default') };
  const moved = path.join(dir, 'moved');
  fs.mkdirSync(moved);
  lib.copyExampleMesh(moved, V1_MOVED, V2);
  const change = cxds('apply', '-f', moved);
  const revision = Number((/at revision (\d+)/.exec(change.out) || [0, 0])[1]);
  check(change.code === 0 && /update \/mesh\/WorkloadEntry\/default\/inventory-v1/.test(change.out), 'cxds apply writes only the changed document', change.out.trim());
  for (const r of ['a', 'b']) {
    await until(`replica ${r} at revision ${revision}`, async () => ((await source(r)) || {}).revision >= revision);
    const res = lib.client(direct[r], ['--calls', '40', '--deadline-ms', '5000']);
    check(res.ok === 40 && (res.by_port[V1_MOVED] || 0) > 0 && !res.by_port[V1], `the change reached the client of replica ${r}`, res.by_port);
  }

  // 4. etcd stops: last good config serves, the source is reported disconnected.
  etcd.kill('SIGKILL');
  for (const r of ['a', 'b']) {
    await until(`replica ${r} to report etcd gone`, async () => ((await source(r)) || {}).connected === false);
    check((await getFrom(ADMIN[r], '/ready')).status === 200 && (await metric(r, 'cxds_config_source_connected')) === 0,
      `replica ${r} stays ready and reports the source disconnected (page and metric)`);
    const res = lib.client(direct[r], ['--calls', '20', '--deadline-ms', '5000']);
    check(res.ok === 20, `clients of replica ${r} keep routing while etcd is down`, res.by_port);
  }
  etcd = await startEtcd(path.join(dir, 'etcd'));
  const back = cxds('apply', '-f', config);  // v1 back on its first port
  const backRevision = Number((/at revision (\d+)/.exec(back.out) || [0, 0])[1]);
  check(back.code === 0 && backRevision > revision, 'a change is applied once etcd is back', back.out.trim().split('\n').pop());
  for (const r of ['a', 'b']) {
    await until(`replica ${r} to catch up`, async () => {
      const s = (await source(r)) || {};
      return s.connected && s.revision >= backRevision;
    });
    const res = lib.client(direct[r], ['--calls', '40', '--deadline-ms', '5000']);
    check(res.ok === 40 && (res.by_port[V1] || 0) > 0 && !res.by_port[V1_MOVED], `replica ${r} reconnected and converged on the change`, res.by_port);
    check((await metric(r, 'cxds_config_revision')) >= backRevision, `replica ${r} exports cxds_config_revision`);
  }
  const [fa, fb] = [await lastVersion('a'), await lastVersion('b')];
  check(fa === fb, 'both replicas end on the same version', { a: fa, b: fb });

  forwarder.close();
  console.log(e2e.failures === 0 ? 'ALL PASSED' : `${e2e.failures} FAILED`);
  if (e2e.failures > 0) {
    for (const c of e2e.children) if (c.spawnargs[0].endsWith('cxds')) console.log(c.log.split('\n').slice(-40).join('\n'));
  }
  e2e.stopAll();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(e2e.failures === 0 ? 0 : 1);
}

main().catch((err) => {
  console.log(`FAIL ${err.message}`);
  for (const c of e2e.children) if (c.spawnargs[0].endsWith('cxds') || c.spawnargs.includes('etcd')) console.log(c.log.split('\n').slice(-40).join('\n'));
  e2e.stopAll();
  process.exit(1);
});
