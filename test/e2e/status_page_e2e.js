#!/usr/bin/env node
// The admin status page (issue 15) in a real browser: Debian's chromium, headless, driven by
// playwright-core (npm, pinned). `cxds serve` runs the example mesh with a bearer token; a real
// proxyless gRPC client (Node @grpc/grpc-js-xds) holds its xDS stream open; a routing change is
// made. The page must ask for the token, then show the proxy's row with CDS/LDS/EDS/RDS SYNCED,
// the change's timeline through every stage to ACKed, a non-empty convergence histogram, and,
// on a click on the row, the clusters cxds sent that proxy. A screenshot is saved as the test's
// artefact. Before the browser, `cxds proxy-status` and `cxds proxy-config` run against the
// same daemon. Loopback only, bounded in time.
//
//   node test/e2e/status_page_e2e.js --cxds build/cxds [--base-port 18790] [--out DIR]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const lib = require('../../examples/mesh-client/e2e_lib');

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const CXDS = path.resolve(opt('--cxds', 'build/cxds'));
const BASE = Number(opt('--base-port', '18790'));
const OUT = path.resolve(opt('--out', path.join(os.tmpdir(), 'cxds-status-page-e2e')));
const CHROMIUM = opt('--chromium', '/usr/bin/chromium');
const XDS = BASE, ADMIN = BASE + 5, V1 = BASE + 1, V2 = BASE + 2;
const NODE_ID = 'grpc-app-status-page';
const TOKEN = 'status-page-e2e-token';
const e2e = new lib.E2e(ADMIN, 110000);

const authed = (p) => e2e.get(p, { Authorization: `Bearer ${TOKEN}` });
const json = async (p) => { const r = await authed(p); return r.status === 200 ? JSON.parse(r.body) : null; };

async function main() {
  const { chromium } = require('playwright-core');
  fs.mkdirSync(OUT, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cxds-status-page-'));
  const config = path.join(dir, 'config');
  fs.mkdirSync(config);
  lib.copyExampleMesh(config, V1, V2);
  fs.writeFileSync(path.join(dir, 'token'), TOKEN + '\n');
  const app = lib.bootstrap(path.join(dir, 'app.json'), XDS, NODE_ID, 'default');
  for (const [name, port] of [['v1', V1], ['v2', V2]]) {
    e2e.start(name, process.execPath, [path.join(lib.HERE, '..', 'teaching', 'inventory_server.js'), '--name', name,
      '--port', String(port), '--max-seconds', '110']);
  }
  const cxds = e2e.start('cxds', CXDS, ['serve', '--config-dir', config, '--xds-address', `127.0.0.1:${XDS}`,
    '--admin-address', `127.0.0.1:${ADMIN}`, '--admin-token-file', path.join(dir, 'token'),
    '--debounce-after', '50ms']);
  await e2e.until('/ready', async () => (await e2e.get('/ready')).status === 200);

  // A real client whose xDS stream stays open while the browser looks.
  e2e.start('holder', process.execPath, [path.join(lib.HERE, 'mesh_client.js'), '--calls', '1', '--hold-ms', '60000'],
    { GRPC_XDS_BOOTSTRAP: app });
  const synced = await e2e.until('the client to be SYNCED on every type', async () => {
    const status = await json('/debug/proxy_status');
    const row = status && status.proxies.find((p) => p.node === NODE_ID);
    return row && ['CDS', 'LDS', 'EDS', 'RDS'].every((t) => row[t].state === 'SYNCED') && row;
  }, 30000);
  e2e.check(Boolean(synced), 'a real gRPC client connected and ACKed every type');

  // A change the page must show: the 80/20 split becomes 70/30.
  const routing = path.join(config, 'routing.yaml');
  const before = fs.readFileSync(routing, 'utf8');
  const after = before.replace('weight: 80', 'weight: 70').replace('weight: 20', 'weight: 30');
  e2e.check(after !== before, 'the routing file has the weights this test edits');
  const lastBefore = Math.max(0, ...((await json('/debug/changes')) || []));
  lib.writeAtomically(routing, after);
  const change = await e2e.until('the change to be ACKed by the client', async () => {
    const summaries = (await json('/debug/change_summaries')) || [];
    return summaries.find((s) => s.change > lastBefore && s.proxies_acked >= 1 && s.last_answered_unix_ms !== null);
  }, 30000);

  // The CLI against this running cxds serve: what the real client accepted, and what it was
  // sent against what it would be sent now.
  const cli = (...cliArgs) => require('child_process').spawnSync(CXDS, [...cliArgs, '--admin', `127.0.0.1:${ADMIN}`,
    '--admin-token-file', path.join(dir, 'token')], { encoding: 'utf8', timeout: 20000 });
  const status = cli('proxy-status', NODE_ID);
  e2e.check(status.status === 0 && new RegExp(`\\n${NODE_ID} +127\\.0\\.0\\.1:${ADMIN} +SYNCED +SYNCED +SYNCED +SYNCED `)
    .test(status.stdout), 'cxds proxy-status shows the client SYNCED on every type', status.stdout + status.stderr);
  e2e.check(['Clusters', 'Endpoints', 'Listeners', 'Routes'].every((t) => status.stdout.includes(`\n${t} Match (`)),
    'cxds proxy-status PROXY: what was sent matches what would be sent now', status.stdout);
  const clusters = cli('proxy-config', 'clusters', NODE_ID);
  e2e.check(clusters.status === 0 && /outbound\|8080\|v1\|inventory\.mesh\.local +EDS .* SYNCED/.test(clusters.stdout),
    'cxds proxy-config clusters lists what the client was sent', clusters.stdout + clusters.stderr);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    timeout: 30000,
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const pageErrors = [];
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    const response = await page.goto(`http://127.0.0.1:${ADMIN}/`, { timeout: 15000 });
    e2e.check(response.status() === 200, 'the status page is served at / without the token', response.status());

    // Without the token the data pages answer 401: the page asks for it.
    await page.waitForSelector('#token-form', { state: 'visible', timeout: 10000 });
    e2e.check(true, 'the page asks for the bearer token');
    await page.fill('#token', TOKEN);
    await page.click('#token-form button');

    const row = `tr.proxy[data-node="${NODE_ID}"]`;
    await page.waitForSelector(row, { timeout: 15000 });
    const cells = await page.$$eval(`${row} td[data-type]`, (tds) => tds.map((td) => [td.dataset.type, td.textContent]));
    e2e.check(cells.length === 4 && cells.every(([, text]) => text === 'SYNCED'),
      'the proxy row shows CDS, LDS, EDS and RDS SYNCED', cells);
    const version = await page.textContent('#cxds-version');
    e2e.check(/^\d+\.\d+/.test(version), 'the header shows the cxds version', version);

    // The change's timeline: every stage from received to ACKed, in time order.
    const changeBox = `.change[data-change="${change.change}"]`;
    await page.waitForSelector(changeBox, { timeout: 15000 });
    const stages = await page.$$eval(`${changeBox} .stage`, (marks) =>
      marks.map((m) => [m.dataset.stage, parseFloat(m.style.left)]));
    const names = stages.map(([name]) => name);
    e2e.check(JSON.stringify(names) === JSON.stringify(['received', 'debounced', 'pushed', 'first-sent',
      'last-written', 'acked']), 'the change timeline shows received → debounced → pushed → sent → ACKed', names);
    e2e.check(stages.every(([, left], i) => i === 0 || left >= stages[i - 1][1]), 'the stages are in time order',
      stages);
    const ackedText = await page.textContent(`${changeBox} .title .stage-ACKED`);
    e2e.check(/^[1-9]\d*\/\d+ ACKed$/.test(ackedText), 'the change says how many proxies ACKed it', ackedText);

    // The convergence histogram counts the client's ACKed pushes.
    await page.waitForFunction(() => /\(([1-9]\d*) proxy pushes ACKed\)/.test(
      document.getElementById('convergence-count').textContent), null, { timeout: 10000 });
    const bars = await page.$$eval('#convergence .bar', (b) => b.length);
    e2e.check(bars > 5, 'the convergence histogram has its buckets', bars);

    // A click on the row: what cxds last sent that proxy, per type.
    await page.click(row);
    await page.waitForSelector('#proxy-config tr[data-resource]', { timeout: 10000 });
    const types = await page.$$eval('#proxy-config h3', (hs) => hs.map((h) => h.dataset.typeUrl));
    e2e.check(types.some((t) => t.endsWith('envoy.config.cluster.v3.Cluster')), 'the proxy config shows its clusters',
      types);
    const resources = await page.$$eval('#proxy-config tr[data-resource]', (trs) => trs.map((tr) => tr.dataset.resource));
    e2e.check(resources.some((r) => r.includes('inventory')), 'the inventory resources are listed', resources);
    e2e.check(pageErrors.length === 0, 'the page ran without script errors', pageErrors);

    const shot = path.join(OUT, 'status_page.png');
    await page.screenshot({ path: shot, fullPage: true });
    e2e.check(fs.statSync(shot).size > 10000, `screenshot saved: ${shot}`);
  } finally {
    await browser.close();
  }
  e2e.check(cxds.exitCode === null, 'cxds is still running');
}

main().catch((err) => {
  console.log(`FAIL ${err.message}`);
  e2e.failures++;
}).finally(() => {
  e2e.stopAll();
  console.log(e2e.failures === 0 ? 'status page e2e: OK' : `status page e2e: ${e2e.failures} failure(s)`);
  process.exit(e2e.failures === 0 ? 0 : 1);
});
