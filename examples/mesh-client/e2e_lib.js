// Helpers shared by the end-to-end tests of `cxds serve` with real proxyless gRPC clients:
// child processes that are stopped on exit, PASS/FAIL lines, the admin API, bounded waits.
'use strict';

const { spawn, execFile, execFileSync } = require('child_process');
const fs = require('fs');
const http = require('http');
const path = require('path');

const HERE = __dirname;

class E2e {
  // `admin`: the admin port of the cxds under test; `budgetMs`: the whole run's bound.
  constructor(admin, budgetMs) {
    this.admin = admin;
    this.deadline = Date.now() + budgetMs;
    this.children = [];
    this.failures = 0;
    process.on('exit', () => this.stopAll());
  }

  start(name, cmd, argv, env) {
    const child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    child.log = '';
    child.stdout.on('data', (d) => { child.log += d; });
    child.stderr.on('data', (d) => { child.log += d; });
    this.children.push(child);
    return child;
  }

  stopAll() { for (const c of this.children) { try { c.kill('SIGTERM'); } catch (e) { /* gone */ } } }

  check(ok, what, detail) {
    console.log(`${ok ? 'PASS' : 'FAIL'} ${what}${detail !== undefined ? ' ' + JSON.stringify(detail) : ''}`);
    if (!ok) this.failures++;
    return ok;
  }

  get(p, headers) {
    return new Promise((resolve) => {
      http.get({ host: '127.0.0.1', port: this.admin, path: p, timeout: 5000, headers }, (res) => {
        let body = '';
        res.on('data', (d) => { body += d; });
        res.on('end', () => resolve({ status: res.statusCode, body }));
      }).on('error', () => resolve({ status: 0, body: '' })).on('timeout', function () { this.destroy(); });
    });
  }

  async until(what, fn, ms = 20000) {
    const end = Math.min(Date.now() + ms, this.deadline);
    while (Date.now() < end) {
      const v = await fn();
      if (v) return v;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs mesh_client.js once with `bootstrap`; its JSON result.
function client(bootstrap, extra) {
  const out = execFileSync(process.execPath, [path.join(HERE, 'mesh_client.js'), ...extra],
    { env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap }, timeout: 60000 });
  return JSON.parse(out.toString());
}

// The same, without blocking the event loop: the output of the processes this test started
// (cxds, backends) keeps being read meanwhile, so their pipes never fill and stall them.
function clientAsync(bootstrap, extra) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(HERE, 'mesh_client.js'), ...extra],
      { env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap }, timeout: 60000 }, (err, stdout) => {
        if (err) reject(err); else resolve(JSON.parse(stdout.toString()));
      });
  });
}

function writeAtomically(file, text) {  // how editors and config tools save
  fs.writeFileSync(file + '.tmp~', text);
  fs.renameSync(file + '.tmp~', file);
}

// A gRPC xDS bootstrap for a proxyless client of node `id` in namespace `ns`.
// `labels` (optional): the node's LABELS, which VirtualService sourceLabels match.
// `locality` (optional): the node's locality ({region, zone, sub_zone}), which
// DestinationRule localityLbSetting applies to.
function bootstrap(file, xdsPort, id, ns, labels, locality) {
  const metadata = { GENERATOR: 'grpc', NAMESPACE: ns };
  if (labels) metadata.LABELS = labels;
  fs.writeFileSync(file, JSON.stringify({
    xds_servers: [{ server_uri: `127.0.0.1:${xdsPort}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: { id, locality: locality || {}, metadata },
  }));
  return file;
}

// Copies examples/mesh into `config` with the two inventory backends on `v1` and `v2`.
function copyExampleMesh(config, v1, v2) {
  const MESH = path.join(HERE, '..', 'mesh');
  for (const f of fs.readdirSync(MESH).filter((f) => f.endsWith('.yaml'))) {
    fs.writeFileSync(path.join(config, f), fs.readFileSync(path.join(MESH, f), 'utf8')
      .replace('grpc: 18081', `grpc: ${v1}`).replace('grpc: 18082', `grpc: ${v2}`));
  }
}

module.exports = { E2e, sleep, client, clientAsync, writeAtomically, bootstrap, copyExampleMesh, HERE };
