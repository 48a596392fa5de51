#!/usr/bin/env node
// Does a client really resolve xds:/// targets? For each teaching client this starts a
// recording ADS endpoint on 127.0.0.1 (it accepts StreamAggregatedResources, records the
// requests and never answers), runs the client with a bootstrap that points at it, makes one
// call, and reports what the client sent and what error the call ended with. For contrast it
// also runs each client with a bootstrap naming a port where nothing listens (--port + 1), with no
// bootstrap at all, and against a scheme nobody registered (nosuchscheme:///quote).
//
//   node examples/teaching/probe_xds_resolver.js [--port 18999] [--cpp-client build/cxds-teaching-client]
//        [--python /usr/bin/python3]
//
// A client has a working xds resolver when, with the bootstrap, its ADS stream reaches the
// endpoint and its first DiscoveryRequest asks for the Listener "quote" with node id
// teaching-envoy. Everything is bounded: each client run has a 10 s limit, the probe 90 s.
'use strict';

const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const HERE = __dirname;
const REPO_ROOT = path.resolve(HERE, '..', '..');

function parseArgs(argv) {
  const o = { port: 18999, cppClient: path.join(REPO_ROOT, 'build', 'cxds-teaching-client'), python: '/usr/bin/python3' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
    if (a === '--port') o.port = Number(argv[++i]);
    else if (a === '--cpp-client') o.cppClient = path.resolve(argv[++i]);
    else if (a === '--python') o.python = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

// The Envoy API .proto files shipped inside @grpc/grpc-js-xds.
function loadAds() {
  const deps = path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
  const def = protoLoader.loadSync('envoy/service/discovery/v3/ads.proto', {
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
    includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) => path.join(deps, d)),
  });
  return grpc.loadPackageDefinition(def).envoy.service.discovery.v3.AggregatedDiscoveryService;
}

function startRecorder(port, requests) {
  const server = new grpc.Server();
  const open = new Set();
  server.addService(loadAds().service, {
    StreamAggregatedResources(call) {
      open.add(call);
      call.on('data', (req) => requests.push({
        ts: new Date().toISOString(),
        node_id: req.node ? req.node.id : '',
        type_url: req.type_url,
        resource_names: req.resource_names,
        version_info: req.version_info,
        response_nonce: req.response_nonce,
      }));
      const done = () => open.delete(call);
      call.on('end', () => {
        done();
        call.end();
      });
      call.on('error', done);
      call.on('cancelled', done);
    },
  });
  return new Promise((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
      if (err) reject(err);
      else {
        resolve({
          stop: () => {
            for (const c of open) c.destroy();
            server.forceShutdown();
          },
        });
      }
    });
  });
}

// Runs one client for one `call`, returns its JSON reply (or what went wrong).
function runClient(cmd, args, env) {
  return new Promise((resolve) => {
    const proc = childProcess.spawn(cmd, args, { cwd: REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
    proc.stdout.on('data', (d) => {
      out += d;
    });
    proc.stderr.on('data', (d) => {
      err += d;
    });
    proc.on('error', (e) => {
      clearTimeout(timer);
      resolve({ reply: null, note: `cannot run: ${e.message}` });
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      let reply = null;
      try {
        reply = line ? JSON.parse(line) : null;
      } catch (e) {
        reply = null;
      }
      resolve({ reply, note: reply ? '' : `exit code=${code} signal=${signal}; stderr: ${err.trim().slice(0, 300)}` });
    });
    proc.stdin.on('error', () => {});
    proc.stdin.end('call probe\nquit\n');
  });
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cxds-probe-'));
  const bootstrap = path.join(tmp, 'bootstrap.json');
  fs.writeFileSync(bootstrap, JSON.stringify({
    node: { id: 'teaching-envoy', locality: {} },
    xds_servers: [{ server_uri: `127.0.0.1:${o.port}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
  }));
  // A second bootstrap names a port where nothing listens: the control plane "is not running".
  const deadBootstrap = path.join(tmp, 'bootstrap-dead.json');
  fs.writeFileSync(deadBootstrap, JSON.stringify({
    node: { id: 'teaching-envoy', locality: {} },
    xds_servers: [{ server_uri: `127.0.0.1:${o.port + 1}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
  }));
  const clients = [
    ['node', process.execPath, [path.join(HERE, 'client_node.js')]],
    ['python', o.python, [path.join(HERE, 'client_python.py')]],
    ['cpp', o.cppClient, []],
  ];
  const base = { ...process.env, GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS: '100', CXDS_TEACHING_DEADLINE_MS: '2000' };
  for (const k of ['CXDS_TEACHING_TARGET', 'GRPC_XDS_BOOTSTRAP', 'GRPC_XDS_BOOTSTRAP_CONFIG']) delete base[k];

  const requests = [];
  const recorder = await startRecorder(o.port, requests);
  const overall = setTimeout(() => {
    process.stdout.write('probe: overall limit of 90 s reached\n');
    process.exit(2);
  }, 90000);
  try {
    for (const [name, cmd, args] of clients) {
      if (name === 'cpp' && !fs.existsSync(cmd)) {
        process.stdout.write(`\n== ${name}: ${cmd} not built; skipped\n`);
        continue;
      }
      process.stdout.write(`\n== ${name}\n`);
      const cases = [
        ['xds:///quote, bootstrap -> recording ADS endpoint', { GRPC_XDS_BOOTSTRAP: bootstrap }],
        [`xds:///quote, bootstrap -> 127.0.0.1:${o.port + 1} (nothing listening)`, { GRPC_XDS_BOOTSTRAP: deadBootstrap }],
        ['xds:///quote, no bootstrap', {}],
        ['nosuchscheme:///quote', { GRPC_XDS_BOOTSTRAP: bootstrap, CXDS_TEACHING_TARGET: 'nosuchscheme:///quote' }],
      ];
      for (const [label, extra] of cases) {
        const from = requests.length;
        const { reply, note } = await runClient(cmd, args, { ...base, ...extra });
        const got = requests.slice(from);
        process.stdout.write(`  ${label}\n`);
        process.stdout.write(`    call: ${reply ? `code=${reply.code} error=${JSON.stringify(reply.error)}` : note}\n`);
        if (got.length) {
          const first = got[0];
          process.stdout.write(`    ADS requests received: ${got.length}; first: node=${first.node_id} ` +
            `type=${first.type_url} names=${JSON.stringify(first.resource_names)}\n`);
        } else {
          process.stdout.write('    ADS requests received: 0\n');
        }
      }
    }
  } finally {
    clearTimeout(overall);
    recorder.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`probe: ${e.stack || e}\n`);
  process.exit(1);
});
