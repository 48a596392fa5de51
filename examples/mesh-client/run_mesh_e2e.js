#!/usr/bin/env node
// End-to-end test of `cxds serve` with real proxyless gRPC xDS clients (Node
// @grpc/grpc-js-xds) and real backends, on 127.0.0.1 only, bounded in time:
//
//   1. a ServiceEntry with WorkloadEntries serves traffic; a VirtualService splits 80/20
//      across DestinationRule subsets: over 200 calls v1 gets 140-180 (±20, 3.5 standard
//      deviations of a fair 80/20 draw);
//   2. a header match (x-canary: yes) sends all 20 calls to v2;
//   3. moving the v1 WorkloadEntry to another port moves its traffic through an incremental
//      push (push_status full=false), and /debug/changes/ID shows the client ACKed it;
//   4. a broken file is rejected with file:line in /debug/config_status and the metrics, and
//      traffic is untouched;
//   5. a Sidecar-scoped proxy (namespace shop) gets no push for inventory;
//   6. restarting cxds on the same directory gives the same version.
//
//   node examples/mesh-client/run_mesh_e2e.js --cxds build/cxds [--base-port 18720]
// Exit 0 only if every check passed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { E2e, sleep, client, writeAtomically, bootstrap: makeBootstrap, copyExampleMesh, HERE } = require('./e2e_lib');

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const CXDS = path.resolve(opt('--cxds', 'build/cxds'));
const BASE = Number(opt('--base-port', '18720'));
const XDS = BASE, ADMIN = BASE + 10, V1 = BASE + 1, V2 = BASE + 2, V1_MOVED = BASE + 3;
const e2e = new E2e(ADMIN, 150000);  // the whole run is bounded
const start = e2e.start.bind(e2e), check = e2e.check.bind(e2e), get = e2e.get.bind(e2e), until = e2e.until.bind(e2e);
const stopAll = e2e.stopAll.bind(e2e);
const children = e2e.children;

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cxds-mesh-'));
  const config = path.join(dir, 'config');
  fs.mkdirSync(config);
  copyExampleMesh(config, V1, V2);
  const bootstrap = (file, id, ns) => makeBootstrap(file, XDS, id, ns);
  const app = bootstrap(path.join(dir, 'app.json'), 'grpc-app-1', 'default');
  const shop = bootstrap(path.join(dir, 'shop.json'), 'grpc-shop-1', 'shop');

  for (const [name, port] of [['v1', V1], ['v2', V2], ['v1-moved', V1_MOVED]]) {
    start(name, process.execPath, [path.join(HERE, '..', 'teaching', 'inventory_server.js'), '--name', name,
      '--port', String(port), '--max-seconds', '170']);
  }
  const serveArgs = ['serve', '--config-dir', config, '--xds-address', `127.0.0.1:${XDS}`,
    '--admin-address', `127.0.0.1:${ADMIN}`, '--debounce-after', '50ms'];
  let cxds = start('cxds', CXDS, serveArgs);
  await until('/ready', async () => (await get('/ready')).status === 200);
  check(true, 'cxds serve is ready');

  // 1 and 2: traffic, the 80/20 split, the header match.
  const split = client(app, ['--calls', '200']);
  const v1 = split.by_inventory.v1 || 0;
  check(split.ok === 200 && v1 >= 140 && v1 <= 180, 'VirtualService 80/20 over DestinationRule subsets (v1 in 140..180 of 200)', split.by_inventory);
  const canary = client(app, ['--calls', '20', '--header', 'x-canary=yes']);
  check(canary.ok === 20 && canary.by_inventory.v2 === 20, 'header match x-canary: yes routes every call to v2', canary.by_inventory);

  // 3 and 5 (set-up): an app proxy and a proxy of namespace shop hold their streams open
  // while the change is made.
  const holders = [
    start('app-holder', process.execPath, [path.join(HERE, 'mesh_client.js'), '--calls', '1', '--hold-ms', '30000'],
      { GRPC_XDS_BOOTSTRAP: app }),
    start('shop-holder', process.execPath, [path.join(HERE, 'mesh_client.js'),
      '--target', 'xds:///reviews.shop.svc.cluster.local:9080', '--calls', '1', '--deadline-ms', '500',
      '--hold-ms', '30000'], { GRPC_XDS_BOOTSTRAP: shop }),
  ];
  await until('both proxies connected with endpoints', async () => {
    const s = JSON.parse((await get('/debug/syncz')).body || '[]');
    const synced = (node) => s.some((x) => x.node === node &&
      x.types.some((t) => t.type.endsWith('ClusterLoadAssignment') && t.status === 'SYNCED'));
    return synced('grpc-shop-1') && synced('grpc-app-1');
  });
  const pushesBefore = JSON.parse((await get('/debug/push_status')).body).length;
  const dump = await get('/debug/config_dump?proxy=grpc-app-1');
  check(dump.status === 200 && dump.body.includes('outbound|8080|v1|inventory.mesh.local') &&
    dump.body.includes('inventory.mesh.local:8080'), '/debug/config_dump shows what the proxy is served',
  { status: dump.status, bytes: dump.body.length });
  const notReady = await get('/debug/config_dump?proxy=nobody');
  check(notReady.status === 404, '/debug/config_dump of an unknown proxy is 404');

  // 3: move v1 to another port.
  const workloads = path.join(config, 'workloads.yaml');
  writeAtomically(workloads, fs.readFileSync(workloads, 'utf8').replace(`grpc: ${V1}`, `grpc: ${V1_MOVED}`));
  const changeId = await until('the CONFIG log line', async () => {
    const m = /CONFIG file=\S*workloads\.yaml objects_changed=\d+ push=(\w+) change=(\d+)/.exec(cxds.log);
    return m ? { push: m[1], id: m[2] } : null;
  });
  check(changeId.push === 'incremental', 'a WorkloadEntry port change is an incremental push', changeId);
  const moved = await until('traffic on the moved port', async () => {
    const r = client(app, ['--calls', '20']);
    return (r.by_port[V1_MOVED] || 0) > 0 && !r.by_port[V1] ? r : null;
  });
  check(true, 'traffic moved to the new port', moved.by_port);
  const pushes = JSON.parse((await get('/debug/push_status')).body);
  const last = pushes[pushes.length - 1];
  check(last.full === false, '/debug/push_status: the push was not full', { full: last.full, reasons: last.reasons });
  check(last.proxies === 2 && last.proxies_pushed === 1, 'the Sidecar-scoped shop proxy got no push for inventory',
    { proxies: last.proxies, pushed: last.proxies_pushed });
  check(pushes.length === pushesBefore + 1, 'one push for the change', { before: pushesBefore, after: pushes.length });
  const stages = await until('the client to ACK the change', async () => {
    const r = await get(`/debug/changes/${changeId.id}`);
    if (r.status !== 200) return null;
    const c = JSON.parse(r.body);
    return c.proxies.length > 0 && c.proxies.every((p) => p.state === 'ACKED') ? c : null;
  });
  check(stages.proxies[0].node === 'grpc-app-1' && stages.proxies[0].types[0].type.endsWith('ClusterLoadAssignment'),
    '/debug/changes/ID: every stage to the ACK', { queued: stages.proxies[0].queued, acked: stages.proxies[0].types[0].answered });

  // 4: a broken file changes nothing that is served.
  const routing = path.join(config, 'routing.yaml');
  const goodRouting = fs.readFileSync(routing, 'utf8');
  writeAtomically(routing, goodRouting.replace('weight: 80}', 'weight: eighty}'));
  const status = await until('the error in /debug/config_status', async () => {
    const s = JSON.parse((await get('/debug/config_status')).body);
    const f = s.find((x) => x.file.endsWith('routing.yaml'));
    return f && f.errors.length > 0 ? f : null;
  });
  check(/routing\.yaml:\d+: VirtualService default\/inventory: spec\.http\[1\]\.route\[0\]\.weight/.test(status.errors[0]),
    'the error names file, line, object and field', status.errors[0]);
  // The store records the error just before the gauge is set: wait for the gauge (bounded).
  const metricsText = await until('the error in the metrics', async () => {
    const m = (await get('/metrics')).body;
    return /\ncxds_config_errors 1\n/.test(m) ? m : null;
  }, 5000).catch(() => (get('/metrics')).then((r) => r.body));
  check(/\ncxds_config_errors 1\n/.test(metricsText), 'metrics count the rejected document',
    (metricsText.match(/cxds_config_\w+ \S+/g) || []).join(' '));
  const after = client(app, ['--calls', '200']);
  const v1b = after.by_inventory['v1-moved'] || 0;
  check(after.ok === 200 && v1b >= 140 && v1b <= 180, 'traffic untouched by the broken file (80/20 kept)', after.by_inventory);
  writeAtomically(routing, goodRouting);
  await until('the error to clear', async () => /cxds_config_errors 0\b/.test((await get('/metrics')).body));

  // 6: restart on the same directory: the same version.
  await sleep(200);
  const fulls = JSON.parse((await get('/debug/push_status')).body).filter((p) => p.full);
  const version = fulls[fulls.length - 1].version;
  cxds.kill('SIGTERM');
  await until('cxds to stop', async () => cxds.exitCode !== null || cxds.signalCode !== null);
  cxds = start('cxds-restarted', CXDS, serveArgs);
  await until('/ready after restart', async () => (await get('/ready')).status === 200);
  const first = JSON.parse((await get('/debug/push_status')).body)[0];
  check(first.version === version, 'restarting with the same directory gives the same version', { before: version, after: first.version });

  for (const h of holders) h.kill('SIGTERM');
  console.log(e2e.failures === 0 ? 'ALL PASSED' : `${e2e.failures} FAILED`);
  if (e2e.failures > 0) console.log('--- cxds log (tail) ---\n' + cxds.log.split('\n').slice(-40).join('\n'));
  stopAll();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(e2e.failures === 0 ? 0 : 1);
}

main().catch((err) => {
  console.log(`FAIL ${err.message}`);
  for (const c of children) if (c.spawnargs[0].endsWith('cxds')) console.log(c.log.split('\n').slice(-40).join('\n'));
  stopAll();
  process.exit(1);
});
