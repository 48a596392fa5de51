#!/usr/bin/env node
// End-to-end test of examples/bookinfo with a real proxyless gRPC xDS client (Node
// @grpc/grpc-js-xds), real backends on 127.0.0.11-14, bounded in time (issue 17):
//
//   1. the manifest mixing Namespace, ServiceAccount and Deployments with the Service is read:
//      5 documents skipped, nothing refused, no analysis warning;
//   2. reviews on Kubernetes Services is split by subset: the EndpointSlice endpoints carry the
//      labels of the Pods their targetRefs name, so 80/20 over v1/v3 holds (v1 in 284..356 of
//      400) and the header end-user: jason reaches v2 only; a client whose node LABELS have
//      track: canary reaches v3 only (the route's sourceLabels), jason still v2. The split and
//      the canary route are a delegate VirtualService's (routing.yaml), so these calls also
//      prove the delegation merge: without it only jason's route would be served;
//   2b. a client whose Pod (named by its Istio node id) is labelled track: canary reaches v3
//      with no labels in its bootstrap; relabelling the Pod pushes the running client again;
//   3. ratings is a Service whose selector selects a WorkloadEntry (a VM): served from it; its
//      VirtualService's faults happen in the client (gRFC A33): end-user jason is delayed
//      300 ms on every call, tester fails UNAVAILABLE on every call without reaching the VM, and
//      half fails with 503 (UNAVAILABLE to gRPC) on 50% of calls (70..130 of 200); impatient's
//      route timeout (100 ms, as max_stream_duration) ends each of its 300 ms-delayed calls
//      DEADLINE_EXCEEDED;
//   3b. details has a ring hash on x-session: each of 12 sessions sticks to one of the three
//      replicas over 8 calls, and the sessions do not all land on one replica;
//   4. without the Pods the subsets select nothing: each is a warning (file:line, field) in
//      /debug/config_status and in the metrics, and the client gets UNAVAILABLE; putting the
//      Pods back is an incremental (EDS) push and jason reaches v2 again;
//   5. a DestinationRule gRPC cannot honour in full (LEAST_REQUEST, outlier detection): the
//      gRPC node's /debug/config_status?proxy=ID names each part it is not given and why;
//   6. a DNS ServiceEntry whose endpoint is `localhost`: cxds resolves it (/etc/hosts, no
//      network) and serves the gRPC client the address over EDS; its calls reach 127.0.0.1;
//   7. retries happen in the client (gRFC A44): a backend that fails every other call with
//      UNAVAILABLE answers all 20 calls of the route with `retries: {attempts: 2, retryOn:
//      unavailable}` (40 attempts reach it), and 10 of 20 on a route without retries (gRPC
//      nodes get no default retry policy);
//   8. localityLbSetting failover in the client: a client in region r-a (its bootstrap's
//      node.locality) with a rule `failover: r-a -> r-c` and outlier detection is sent three
//      priorities, so all 20 calls reach the r-a backend; once that backend is killed, a client
//      (a new process: it finds r-a refusing and its priority policy moves on) sends all 20 to
//      r-c, the rule's `to` (without the rule r-b and r-c would share one priority);
//   9. failoverPriority in the client: two backends of one locality labelled track canary and
//      stable, a rule `failoverPriority: [track]`: a client labelled track: canary (its
//      bootstrap's LABELS) sends all 20 calls to the canary, one labelled stable all 20 to the
//      stable one (one priority each, where without the rule they would share the calls);
//  10. an ExternalName Service book-reviews naming reviews: a client dialling
//      xds:///book-reviews.bookinfo.svc.cluster.local:9080 gets reviews' routes under the alias's
//      name (istiod's Alias resolution), so end-user: jason reaches v2 only;
//  11. a Service without a selector whose endpoints are written as v1 Endpoints (one ready
//      address, one not): every call reaches the ready one, as through the slice Kubernetes
//      mirrors from them.
//
//   node test/e2e/bookinfo_e2e.js --cxds build/cxds [--base-port 18830]
// Exit 0 only if every check passed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const MESH_CLIENT = path.join(__dirname, '..', '..', 'examples', 'mesh-client');
const { E2e, clientAsync: client, writeAtomically, bootstrap: makeBootstrap } = require(path.join(MESH_CLIENT, 'e2e_lib'));

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const CXDS = path.resolve(opt('--cxds', 'build/cxds'));
const BASE = Number(opt('--base-port', '18830'));
const XDS = BASE, ADMIN = BASE + 10, PORT = BASE + 1;  // every backend on PORT, each on its own address
const BOOKINFO = path.join(__dirname, '..', '..', 'examples', 'bookinfo');
const e2e = new E2e(ADMIN, 150000);
const check = e2e.check.bind(e2e);
const get = e2e.get.bind(e2e), until = e2e.until.bind(e2e);
// A gRPC backend (examples/teaching/inventory_server.js) named `name` on `host`:PORT for `seconds`.
const backend = (name, host, seconds, extra = []) => e2e.start(name, process.execPath,
  [path.join(__dirname, '..', '..', 'examples', 'teaching', 'inventory_server.js'), '--name', name, '--host', host,
    '--port', String(PORT), '--max-seconds', String(seconds), ...extra]);

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cxds-bookinfo-'));
  const config = path.join(dir, 'config');
  fs.mkdirSync(config);
  for (const f of fs.readdirSync(BOOKINFO).filter((f) => f.endsWith('.yaml'))) {
    fs.writeFileSync(path.join(config, f), fs.readFileSync(path.join(BOOKINFO, f), 'utf8').replaceAll('19080', String(PORT)));
  }
  const app = makeBootstrap(path.join(dir, 'productpage.json'), XDS, 'productpage-1', 'bookinfo');
  for (const [name, host] of [['reviews-v1', '127.0.0.11'], ['reviews-v2', '127.0.0.12'], ['reviews-v3', '127.0.0.13'],
    ['ratings-vm', '127.0.0.14'], ['details-a', '127.0.0.21'], ['details-b', '127.0.0.22'], ['details-c', '127.0.0.23']]) {
    backend(name, host, 170);
  }
  const cxds = e2e.start('cxds', CXDS, ['serve', '--config-dir', config, '--xds-address', `127.0.0.1:${XDS}`,
    '--admin-address', `127.0.0.1:${ADMIN}`, '--debounce-after', '50ms', '--dns-refresh', '1s']);
  await until('/ready', async () => (await get('/ready')).status === 200);
  const status = async () => { const r = await get("/debug/config_status"); if (!r.body) throw new Error(`config_status: HTTP ${r.status}`); return JSON.parse(r.body); };

  // 1
  const files = await status();
  const count = (key) => files.reduce((n, f) => n + f[key].length, 0);
  check(count('skipped') === 5 && count('errors') === 0 && count('warnings') === 0,
    'the manifest is read: Namespace, ServiceAccount, 3 Deployments skipped; no error, no warning',
    { skipped: count('skipped'), errors: count('errors'), warnings: count('warnings') });

  // 2
  const reviews = ['--target', 'xds:///reviews.bookinfo.svc.cluster.local:9080'];
  // 400 calls, v1 within 4.5 standard deviations of 320 (a binomial's sd is 8 here): the band
  // of 140..180 of 200 it replaced (3.5 sd) failed about one run in two thousand by chance.
  const split = await client(app, [...reviews, '--calls', '400']);
  const v1 = split.by_inventory['reviews-v1'] || 0;
  check(split.ok === 400 && v1 >= 284 && v1 <= 356 && v1 + (split.by_inventory['reviews-v3'] || 0) === 400,
    'subsets select the Pods of the slice endpoints: 80/20 over v1/v3 (v1 in 284..356 of 400)', split.by_inventory);
  const jason = await client(app, [...reviews, '--calls', '20', '--header', 'end-user=jason']);
  check(jason.ok === 20 && jason.by_inventory['reviews-v2'] === 20, 'end-user: jason reaches v2 only', jason.by_inventory);
  // The same target from a client labelled track: canary: the sourceLabels route is in its
  // routes only, so it reaches v3 alone (jason's header match still comes first).
  const canaryApp = makeBootstrap(path.join(dir, 'canary.json'), XDS, 'productpage-canary-1', 'bookinfo',
    { app: 'productpage', track: 'canary' });
  const canary = await client(canaryApp, [...reviews, '--calls', '20']);
  check(canary.ok === 20 && canary.by_inventory['reviews-v3'] === 20,
    'sourceLabels: a client labelled track: canary reaches v3 only', canary.by_inventory);
  const canaryJason = await client(canaryApp, [...reviews, '--calls', '5', '--header', 'end-user=jason']);
  check(canaryJason.ok === 5 && canaryJason.by_inventory['reviews-v2'] === 5,
    'and its jason still reaches v2 (the earlier route)', canaryJason.by_inventory);

  // 2b. Who a client is comes from its Pod (istiod's SetWorkloadLabels): a client of Istio's
  //     node id form whose bootstrap has no labels, but whose Pod is labelled track: canary,
  //     gets the canary route; relabelled track: stable while the client runs, that client is
  //     pushed its routes again (istiod's ProxyUpdate) and leaves v3 mid-run.
  const servedBy = (name) => (e2e.children.find((c) => c.spawnargs.includes(name)).log.match(/"event":"request"/g) || []).length;
  const podName = 'productpage-canary-6f7b9d-k2x4p';
  const podClientId = `sidecar~127.0.0.60~${podName}.bookinfo~bookinfo.svc.cluster.local`;
  const podFile = path.join(config, 'productpage-pod.yaml');
  const podYaml = (track) => `apiVersion: v1
kind: Pod
metadata: {name: ${podName}, namespace: bookinfo, labels: {app: productpage, track: ${track}}}
status: {phase: Running, podIP: 127.0.0.60}
`;
  writeAtomically(podFile, podYaml('canary'));
  await until('the client Pod to be read', async () => (await status()).some((f) => f.file.endsWith('productpage-pod.yaml') && f.accepted.length === 1));
  const podApp = makeBootstrap(path.join(dir, 'pod.json'), XDS, podClientId, 'bookinfo');
  const v3Before = servedBy('reviews-v3');
  const live = client(podApp, [...reviews, '--calls', '60', '--interval-ms', '100']);
  await until('the Pod\'s client to reach v3', async () => servedBy('reviews-v3') >= v3Before + 5, 10000);
  const podPage = JSON.parse((await get(`/debug/config_status?proxy=${encodeURIComponent(podClientId)}`)).body);
  check(podPage.workload === `Pod bookinfo/${podName}`, '/debug/config_status?proxy=ID names the Pod the client is', podPage.workload);
  writeAtomically(podFile, podYaml('stable'));
  const relabelled = await live;
  check(relabelled.ok === 60 && (relabelled.by_inventory['reviews-v3'] || 0) >= 5 && (relabelled.by_inventory['reviews-v1'] || 0) >= 1,
    'a client labelled by its Pod alone reaches v3; its Pod relabelled, the running client is pushed and leaves v3', relabelled.by_inventory);

  // 3
  const ratings = await client(app, ['--target', 'xds:///ratings.bookinfo.svc.cluster.local:9080', '--calls', '20']);
  check(ratings.ok === 20 && ratings.by_inventory['ratings-vm'] === 20,
    'the ratings Service selects its WorkloadEntry (a VM) and is served from it', ratings.by_inventory);

  const ratingsAs = (user, calls) => client(app, ['--target', 'xds:///ratings.bookinfo.svc.cluster.local:9080',
    '--calls', String(calls), '--header', `end-user=${user}`]);
  const delayed = await ratingsAs('jason', 5);
  check(delayed.ok === 5 && delayed.min_ms >= 295, 'fault delay: every call of jason took at least 300 ms',
    { ok: delayed.ok, min_ms: delayed.min_ms, max_ms: delayed.max_ms, ratings_fast: ratings.max_ms });
  const served = (name) => (e2e.children.find((c) => c.spawnargs.includes(name)).log.match(/"event":"request"/g) || []).length;
  const servedBefore = served('ratings-vm');
  const aborted = await ratingsAs('tester', 20);
  // One call without a fault after them: once the VM's log shows it, the log is read up to date.
  await ratingsAs('nobody', 1);
  await until('the VM to log the last call', async () => served('ratings-vm') > servedBefore, 5000).catch(() => null);
  check(aborted.errors === 20 && aborted.by_code['14'] === 20 && served('ratings-vm') === servedBefore + 1,
    'fault abort: every call of tester failed UNAVAILABLE and none reached the VM',
    { by_code: aborted.by_code, first_error: aborted.first_error, vm_requests: served('ratings-vm') - servedBefore - 1 });
  const impatient = await ratingsAs('impatient', 5);
  check(impatient.errors === 5 && impatient.by_code['4'] === 5,
    'route timeout: every call of impatient (100 ms timeout over a 300 ms delay) ended DEADLINE_EXCEEDED',
    { by_code: impatient.by_code, first_error: impatient.first_error });
  const half = await ratingsAs('half', 200);
  check(half.ok + half.errors === 200 && half.errors >= 70 && half.errors <= 130 && (half.by_code['14'] || 0) === half.errors,
    'fault abort at 50%: 70..130 of 200 calls failed, with the 503 as UNAVAILABLE', half.by_code);

  // 3b
  const sessions = {};
  for (let i = 0; i < 12; i++) {
    const r = await client(app, ['--target', 'xds:///details.bookinfo.svc.cluster.local:9080', '--calls', '8',
      '--header', `x-session=session-${i}`]);
    sessions[`session-${i}`] = r.ok === 8 ? Object.keys(r.by_inventory) : ['errors:' + r.errors];
  }
  const replicas = new Set(Object.values(sessions).flat());
  check(Object.values(sessions).every((b) => b.length === 1 && b[0].startsWith('details-')) && replicas.size > 1,
    'ring hash on x-session: every session sticks to one replica, sessions spread over replicas', sessions);

  // 4
  const pods = path.join(config, 'pods.yaml');
  const podsText = fs.readFileSync(pods, 'utf8');
  fs.rmSync(pods);
  const warned = await until('the subset warnings', async () => {
    const w = (await status()).flatMap((f) => f.warnings);
    return w.length >= 3 ? w : null;
  });
  check(warned.length === 3 && warned.every((w) => /routing\.yaml:\d+: DestinationRule bookinfo\/reviews: spec\.subsets\[\d\]\.labels: subset "v\d" of reviews\.bookinfo\.svc\.cluster\.local port 9080 selects none of its 3 endpoints .*\[pilot_eds_no_instances\]$/.test(w)),
    'without the Pods, each subset that selects nothing is a warning with file, line and field', warned);
  const metrics = (await get('/metrics')).body;
  check(/cxds_config_warnings\{code="pilot_eds_no_instances"\} 3\b/.test(metrics) && /\npilot_eds_no_instances 3\b/.test(metrics),
    'the metrics count them (cxds_config_warnings, pilot_eds_no_instances)', (metrics.match(/.*eds_no_instances.*/g) || []));
  const empty = await until('the client to see the empty subset', async () => {
    const r = await client(app, [...reviews, '--calls', '1', '--deadline-ms', '1000', '--header', 'end-user=jason']);
    return r.errors === 1 ? r : null;
  });
  check(/^14: /.test(empty.first_error), 'a call routed to an empty subset fails UNAVAILABLE', empty.first_error);
  const pushesBefore = JSON.parse((await get('/debug/push_status')).body).length;
  writeAtomically(pods, podsText);
  const back = await until('jason back on v2', async () => {
    const r = await client(app, [...reviews, '--calls', '10', '--header', 'end-user=jason']);
    return r.ok === 10 ? r : null;
  });
  check(back.by_inventory['reviews-v2'] === 10, 'with the Pods back, jason reaches v2 again', back.by_inventory);
  const pushes = JSON.parse((await get('/debug/push_status')).body).slice(pushesBefore);
  check(pushes.length >= 1 && pushes.every((p) => p.full === false), 'putting the Pods back was an incremental push',
    pushes.map((p) => ({ full: p.full, reasons: p.reasons })));
  check((await status()).flatMap((f) => f.warnings).length === 0, 'and the warnings are gone');

  // 5
  writeAtomically(path.join(config, 'ratings-policy.yaml'), `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: ratings, namespace: bookinfo}
spec:
  host: ratings
  trafficPolicy:
    loadBalancer: {simple: LEAST_REQUEST}
    outlierDetection: {consecutive5xxErrors: 3, interval: 5s}
`);
  await until('the ratings rule to be served', async () => (await status()).some((f) => f.file.endsWith('ratings-policy.yaml') && f.accepted.length === 1));
  // The client holds its stream open while the proxy's page is read.
  const held = client(app, ['--target', 'xds:///ratings.bookinfo.svc.cluster.local:9080', '--calls', '3', '--hold-ms', '15000']);
  const notes = await until('the per-proxy notes', async () => {
    const r = await get('/debug/config_status?proxy=productpage-1');
    if (r.status !== 200) return null;
    const page = JSON.parse(r.body);
    return page.not_served.some((n) => n.resource === 'outbound|9080||ratings.bookinfo.svc.cluster.local') ? page : null;
  });
  const about = notes.not_served.filter((n) => n.resource === 'outbound|9080||ratings.bookinfo.svc.cluster.local');
  check(notes.generator === 'grpc' && about.length === 2 && about.every((n) => n.object === 'DestinationRule bookinfo/ratings' && n.field === 'spec.trafficPolicy') &&
    /^loadBalancer\.simple /.test(about[0].reason) && /^outlierDetection /.test(about[1].reason),
    '/debug/config_status?proxy=ID: the gRPC node is told what of the rule it is not given, and why', notes);
  check((await held).ok === 3, 'and its calls to ratings still succeed (round robin)');
  const unknown = await get('/debug/config_status?proxy=nobody');
  check(unknown.status === 404 && /no connected proxy nobody/.test(unknown.body), 'an unknown proxy is a 404 naming it', unknown);

  // 6
  backend('dns-backend', '127.0.0.1', 60);
  writeAtomically(path.join(config, 'partner.yaml'), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partner, namespace: bookinfo}
spec:
  hosts: [partner.example]
  ports: [{number: 9080, name: grpc-partner, protocol: GRPC}]
  resolution: DNS
  endpoints: [{address: localhost, ports: {grpc-partner: ${PORT}}}]
`);
  const viaDns = await until('calls through the name cxds resolved', async () => {
    const r = await client(app, ['--target', 'xds:///partner.example:9080', '--calls', '5', '--deadline-ms', '2000']);
    return r.ok === 5 ? r : null;
  });
  check(viaDns.by_inventory['dns-backend'] === 5, 'a DNS ServiceEntry: cxds resolved localhost for the gRPC client, whose calls reached 127.0.0.1', viaDns);
  check(/DNS name=localhost addresses=\[127\.0\.0\.1/.test(cxds.log), 'and cxds logged what the name resolved to',
    (cxds.log.match(/.*DNS name=.*/g) || []));

  // 7
  const flaky = backend('flaky', '127.0.0.31', 60, ['--fail-every', '2']);
  writeAtomically(path.join(config, 'flaky.yaml'), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: flaky, namespace: bookinfo}
spec:
  hosts: [flaky.example]
  ports: [{number: 9080, name: grpc-flaky, protocol: GRPC}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.31, ports: {grpc-flaky: ${PORT}}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: flaky, namespace: bookinfo}
spec:
  hosts: [flaky.example]
  http:
  - match: [{headers: {x-retry: {exact: "yes"}}}]
    retries: {attempts: 2, retryOn: unavailable}
    route: [{destination: {host: flaky.example}}]
  - route: [{destination: {host: flaky.example}}]
`);
  const flakyTarget = ['--target', 'xds:///flaky.example:9080', '--deadline-ms', '2000'];
  await until('the flaky service to be served', async () => {
    const r = await client(app, [...flakyTarget, '--calls', '2']);
    return r.ok + r.errors === 2 && r.ok > 0 ? r : null;
  });
  const attemptsBefore = (flaky.log.match(/"event":"(request|failed)"/g) || []).length;
  const retried = await client(app, [...flakyTarget, '--calls', '20', '--header', 'x-retry=yes']);
  const attemptsSeen = () => (flaky.log.match(/"event":"(request|failed)"/g) || []).length - attemptsBefore;
  // The backend logs each attempt before answering it; its last lines may still be in the pipe.
  await until('the backend to log 40 attempts', async () => attemptsSeen() >= 40, 2000).catch(() => null);
  const attempts = attemptsSeen();
  check(retried.ok === 20 && attempts === 40,
    'retries: {attempts: 2, retryOn: unavailable}: every call succeeds, each on its second attempt', { ...retried.by_code, attempts });
  const plain = await client(app, [...flakyTarget, '--calls', '20']);
  check(plain.ok === 10 && plain.by_code['14'] === 10, 'without retries half the calls fail UNAVAILABLE', plain.by_code);

  // 8
  const regional = {};
  for (const [name, host] of [['loc-a', '127.0.0.41'], ['loc-b', '127.0.0.42'], ['loc-c', '127.0.0.43']]) {
    regional[name] = backend(name, host, 60);
  }
  // Each bound before the first call: a refused one would fail the client over by itself.
  await until('the regional backends to listen',
    async () => Object.values(regional).every((c) => /"event":"listening"/.test(c.log)), 10000);
  writeAtomically(path.join(config, 'regional.yaml'), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: regional, namespace: bookinfo}
spec:
  hosts: [regional.example]
  ports: [{number: 9080, name: grpc-regional, protocol: GRPC}]
  resolution: STATIC
  endpoints:
  - {address: 127.0.0.41, locality: r-a/z-1, ports: {grpc-regional: ${PORT}}}
  - {address: 127.0.0.42, locality: r-b/z-1, ports: {grpc-regional: ${PORT}}}
  - {address: 127.0.0.43, locality: r-c/z-1, ports: {grpc-regional: ${PORT}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: regional, namespace: bookinfo}
spec:
  host: regional.example
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3, interval: 5s}
    loadBalancer:
      localityLbSetting:
        failover: [{from: r-a, to: r-c}]
`);
  const inRegionA = makeBootstrap(path.join(dir, 'region-a.json'), XDS, 'productpage-r-a-1', 'bookinfo', undefined,
    { region: 'r-a', zone: 'z-1' });
  const regionalTarget = ['--target', 'xds:///regional.example:9080', '--deadline-ms', '2000'];
  const home = await until('the regional service to be served', async () => {
    const r = await client(inRegionA, [...regionalTarget, '--calls', '20']);
    return r.ok === 20 ? r : null;
  });
  check(home.by_inventory['loc-a'] === 20, 'localityLbSetting: a client in r-a sends every call to r-a (priority 0)',
    home.by_inventory);
  regional['loc-a'].kill('SIGKILL');
  const failedOver = await until('the client to fail over', async () => {
    const r = await client(inRegionA, [...regionalTarget, '--calls', '20']);
    return r.ok === 20 ? r : null;
  });
  check(failedOver.by_inventory['loc-c'] === 20,
    'with r-a gone the client fails over to r-c alone, the rule\'s region, not to r-b', failedOver.by_inventory);

  // 9 (the r-b and r-c backends of 8 are still up)
  writeAtomically(path.join(config, 'pinned.yaml'), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pinned, namespace: bookinfo}
spec:
  hosts: [pinned.example]
  ports: [{number: 9080, name: grpc-pinned, protocol: GRPC}]
  resolution: STATIC
  endpoints:
  - {address: 127.0.0.42, locality: r-b/z-1, labels: {track: canary}, ports: {grpc-pinned: ${PORT}}}
  - {address: 127.0.0.43, locality: r-b/z-1, labels: {track: stable}, ports: {grpc-pinned: ${PORT}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: pinned, namespace: bookinfo}
spec:
  host: pinned.example
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3, interval: 5s}
    loadBalancer:
      localityLbSetting:
        failoverPriority: [track]
`);
  const pinnedTarget = ['--target', 'xds:///pinned.example:9080', '--deadline-ms', '2000', '--calls', '20'];
  for (const track of ['canary', 'stable']) {
    const app = makeBootstrap(path.join(dir, `pinned-${track}.json`), XDS, `productpage-${track}-9`, 'bookinfo',
      { app: 'productpage', track });
    const served = await until(`the pinned service to be served to the ${track} client`, async () => {
      const r = await client(app, pinnedTarget);
      return r.ok === 20 ? r : null;
    });
    const backend = track === 'canary' ? 'loc-b' : 'loc-c';
    check(served.by_inventory[backend] === 20,
      `failoverPriority: a client labelled track: ${track} sends every call to the ${track} backend (priority 0)`,
      served.by_inventory);
  }

  // 10
  writeAtomically(path.join(config, 'book-reviews.yaml'), `apiVersion: v1
kind: Service
metadata: {name: book-reviews, namespace: bookinfo}
spec: {type: ExternalName, externalName: reviews.bookinfo.svc.cluster.local}
`);
  const aliasTarget = ['--target', 'xds:///book-reviews.bookinfo.svc.cluster.local:9080', '--deadline-ms', '2000'];
  const viaAlias = await until('calls through the ExternalName alias', async () => {
    const r = await client(app, [...aliasTarget, '--calls', '20', '--header', 'end-user=jason']);
    return r.ok === 20 ? r : null;
  });
  check(viaAlias.by_inventory['reviews-v2'] === 20,
    'an ExternalName Service: a client dialling the alias gets reviews\' routes (end-user: jason reaches v2 only)',
    viaAlias.by_inventory);
  const aliasFile = (await status()).find((f) => f.file.endsWith('book-reviews.yaml'));
  check(aliasFile && aliasFile.accepted.length === 1 && aliasFile.errors.length === 0 && aliasFile.warnings.length === 0,
    'and the alias is accepted with no error or warning', aliasFile);

  // 11
  backend('legacy', '127.0.0.44', 60);
  writeAtomically(path.join(config, 'legacy.yaml'), `apiVersion: v1
kind: Service
metadata: {name: legacy, namespace: bookinfo}
spec:
  ports: [{name: grpc, port: 9080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: legacy, namespace: bookinfo}
subsets:
- addresses: [{ip: 127.0.0.44}]
  notReadyAddresses: [{ip: 127.0.0.45}]
  ports: [{name: grpc, port: ${PORT}}]
`);
  const viaEndpoints = await until('calls to a Service whose endpoints are v1 Endpoints', async () => {
    const r = await client(app, ['--target', 'xds:///legacy.bookinfo.svc.cluster.local:9080', '--calls', '10',
      '--deadline-ms', '2000']);
    return r.ok === 10 ? r : null;
  });
  check(viaEndpoints.by_inventory['legacy'] === 10,
    'v1 Endpoints of a Service without a selector: served as their mirrored slice (the ready address only)',
    viaEndpoints.by_inventory);

  console.log(e2e.failures === 0 ? 'ALL PASSED' : `${e2e.failures} FAILED`);
  if (e2e.failures > 0) console.log('--- cxds log (tail) ---\n' + cxds.log.split('\n').slice(-40).join('\n'));
  e2e.stopAll();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(e2e.failures === 0 ? 0 : 1);
}

main().catch((err) => {
  console.log(`FAIL ${err.stack}`);
  for (const c of e2e.children) if (c.spawnargs[0].endsWith("cxds")) console.log(`cxds exit=${c.exitCode} signal=${c.signalCode}\n` + c.log.split("\n").slice(-40).join("\n"));
  e2e.stopAll();
  process.exit(1);
});
