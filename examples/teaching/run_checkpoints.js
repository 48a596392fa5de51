#!/usr/bin/env node
// Runs the five teaching checkpoints (initial, updated, rejected-keeps-v2, recovered,
// reconnected) against `cxds demo` with a real proxyless gRPC xDS client in place of Envoy.
//
//   node examples/teaching/run_checkpoints.js --client node|python|cpp
//        [--cxds build/cxds] [--cpp-client <dir of --cxds>/cxds-teaching-client]
//        [--python /usr/bin/python3] [--evidence <dir>]
//        [--xds-port 18000] [--v1-port 18080] [--v2-port 18081] [--deadline-seconds 90]
//
// Everything listens on 127.0.0.1 only. Every wait watches process output or the control-plane
// log with a deadline; the whole run has an overall deadline. All child processes are stopped
// at the end, on failure too. The last line printed is `PASS` or `FAIL: <reason>`, and the exit
// status is 0 only on PASS. Evidence (logs, bootstrap, one JSON file per checkpoint,
// summary.json) goes to --evidence, by default examples/teaching/evidence/<client>-<UTC time>.
'use strict';

const childProcess = require('child_process');
const fs = require('fs');
const net = require('net');
const path = require('path');

const HERE = __dirname;
const REPO_ROOT = path.resolve(HERE, '..', '..');
const NODE_ID = 'teaching-envoy';
const TYPE = {
  lds: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  rds: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  cds: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  eds: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
};
const XDS_EVENTS = ['SENT', 'ACK', 'NACK', 'UNMATCHED', 'OPEN', 'CLOSE'];

// ---------------------------------------------------------------- options

function usage() {
  return 'usage: run_checkpoints.js --client node|python|cpp [--cxds PATH] [--cpp-client PATH]\n' +
    '       [--python PATH] [--evidence DIR] [--xds-port N] [--v1-port N] [--v2-port N]\n' +
    '       [--deadline-seconds N] [--call-deadline-ms N]\n';
}

function parseArgs(argv) {
  const o = {
    cxds: null, client: null, evidence: null, cppClient: null, python: '/usr/bin/python3',
    xdsPort: 18000, v1Port: 18080, v2Port: 18081, deadlineSeconds: 90, callDeadlineMs: 3000,
  };
  const ports = { '--xds-port': 'xdsPort', '--v1-port': 'v1Port', '--v2-port': 'v2Port' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--cxds') o.cxds = path.resolve(next());
    else if (a === '--client') o.client = next();
    else if (a === '--evidence') o.evidence = path.resolve(next());
    else if (a === '--cpp-client') o.cppClient = path.resolve(next());
    else if (a === '--python') o.python = next();
    else if (a in ports) o[ports[a]] = Number(next());
    else if (a === '--deadline-seconds') o.deadlineSeconds = Number(next());
    else if (a === '--call-deadline-ms') o.callDeadlineMs = Number(next());
    else if (a === '--help' || a === '-h') {
      process.stdout.write(usage());
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!['node', 'python', 'cpp'].includes(o.client)) throw new Error('--client must be node, python or cpp');
  for (const key of Object.values(ports)) {
    if (!Number.isInteger(o[key]) || o[key] < 1 || o[key] > 65535) throw new Error(`bad port ${o[key]}`);
  }
  if (new Set([o.xdsPort, o.v1Port, o.v2Port]).size !== 3) throw new Error('the three ports must differ');
  if (!(o.deadlineSeconds > 0 && o.deadlineSeconds <= 600)) throw new Error('bad --deadline-seconds');
  if (!(o.callDeadlineMs > 0 && o.callDeadlineMs <= 60000)) throw new Error('bad --call-deadline-ms');
  if (!o.cxds) o.cxds = path.join(REPO_ROOT, 'build', 'cxds');
  if (!o.cppClient) o.cppClient = path.join(path.dirname(o.cxds), 'cxds-teaching-client');
  if (!o.evidence) {
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    o.evidence = path.join(HERE, 'evidence', `${o.client}-${stamp}`);
  }
  return o;
}

// ---------------------------------------------------------------- run state

const T0 = Date.now();
let transcript = null; // write stream for run.log once the evidence directory exists

function say(msg) {
  const line = `[${((Date.now() - T0) / 1000).toFixed(1).padStart(5)}s] ${msg}`;
  process.stdout.write(line + '\n');
  if (transcript) transcript.write(line + '\n');
}

// A failure anywhere (timeout, unexpected exit, overall deadline, signal) rejects every
// pending wait at once.
let abortError = null;
const abortListeners = new Set();
function abort(err) {
  if (abortError) return;
  abortError = err;
  for (const fn of [...abortListeners]) fn(err);
}

class CheckFailure extends Error {}

function check(cond, msg) {
  if (!cond) throw new CheckFailure(msg);
}

// Lines from one stream of one child process, each stamped on arrival, copied to a file.
class LineSource {
  constructor(name, stream, file) {
    this.name = name;
    this.entries = [];
    this.listeners = new Set();
    this.out = fs.createWriteStream(file);
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      this.out.write(chunk);
      partial += chunk;
      let nl;
      while ((nl = partial.indexOf('\n')) >= 0) {
        this.push(partial.slice(0, nl).replace(/\r$/, ''));
        partial = partial.slice(nl + 1);
      }
    });
    stream.on('end', () => {
      if (partial) this.push(partial);
      partial = '';
    });
  }

  push(line) {
    const entry = { index: this.entries.length, ts: new Date().toISOString(), line };
    this.entries.push(entry);
    for (const fn of [...this.listeners]) fn(entry);
  }

  mark() {
    return this.entries.length;
  }

  since(from) {
    return this.entries.slice(from);
  }

  // Resolves with the first entry at or after `from` for which pred(entry) is truthy.
  waitFor(pred, timeoutMs, what, from = 0) {
    return new Promise((resolve, reject) => {
      if (abortError) return reject(abortError);
      for (let i = from; i < this.entries.length; i++) {
        if (pred(this.entries[i])) return resolve(this.entries[i]);
      }
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners.delete(onEntry);
        abortListeners.delete(onAbort);
      };
      const onEntry = (entry) => {
        if (entry.index >= from && pred(entry)) {
          cleanup();
          resolve(entry);
        }
      };
      const onAbort = (err) => {
        cleanup();
        reject(err);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new CheckFailure(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.listeners.add(onEntry);
      abortListeners.add(onAbort);
    });
  }
}

// Parses `EVENT stream=<id> key=value ... key="quoted text"` out of a cxds log line.
function parseXdsEvent(line) {
  const m = /(?:^|\s)(SENT|ACK|NACK|UNMATCHED|OPEN|CLOSE) (stream=.*)$/.exec(line);
  if (!m || !XDS_EVENTS.includes(m[1])) return null;
  const ev = { event: m[1] };
  const kv = /([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)/g;
  let p;
  while ((p = kv.exec(m[2])) !== null) {
    let value = p[2];
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value);
      } catch (e) {
        value = value.slice(1, -1);
      }
    }
    if (!(p[1] in ev)) ev[p[1]] = value;
  }
  return ev.stream === undefined ? null : ev;
}

function xdsEntry(entry) {
  if (entry.xds === undefined) entry.xds = parseXdsEvent(entry.line);
  return entry.xds;
}

function shortType(typeUrl) {
  for (const [k, v] of Object.entries(TYPE)) if (v === typeUrl) return k.toUpperCase();
  return typeUrl;
}

// ---------------------------------------------------------------- child processes

const children = [];

function spawnChild(name, cmd, args, { env, evidence, stderrFile }) {
  const proc = childProcess.spawn(cmd, args, {
    cwd: REPO_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const child = {
    name, proc, pid: proc.pid, exited: false, code: null, signal: null, expectExit: false,
    stdout: new LineSource(`${name}.stdout`, proc.stdout, path.join(evidence, `${name}.stdout.log`)),
    stderr: new LineSource(`${name}.stderr`, proc.stderr, path.join(evidence, stderrFile || `${name}.stderr.log`)),
  };
  child.exitPromise = new Promise((resolve) => {
    proc.on('exit', (code, signal) => {
      child.exited = true;
      child.code = code;
      child.signal = signal;
      if (!child.expectExit) {
        abort(new CheckFailure(`${name} (pid ${proc.pid}) exited unexpectedly: code=${code} signal=${signal}`));
      }
      resolve();
    });
  });
  proc.on('error', (err) => {
    child.exited = true;
    abort(new CheckFailure(`${name}: cannot run ${cmd}: ${err.message}`));
  });
  proc.stdin.on('error', () => {}); // EPIPE after the child is gone is not interesting
  children.push(child);
  say(`started ${name} (pid ${proc.pid}): ${[cmd, ...args].join(' ')}`);
  return child;
}

function send(child, line) {
  if (child.exited) throw new CheckFailure(`${child.name} is not running; cannot send "${line}"`);
  child.proc.stdin.write(line + '\n');
}

function waitExit(child, timeoutMs) {
  if (child.exited) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.exitPromise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

// SIGTERM, then SIGKILL; bounded.
async function stopChild(child, { graceMs = 3000 } = {}) {
  child.expectExit = true;
  if (child.exited) return;
  try {
    child.proc.kill('SIGTERM');
  } catch (e) {
    // already gone
  }
  if (await waitExit(child, graceMs)) return;
  say(`${child.name} (pid ${child.pid}) ignored SIGTERM; sending SIGKILL`);
  try {
    child.proc.kill('SIGKILL');
  } catch (e) {
    // already gone
  }
  await waitExit(child, 2000);
}

async function stopAll() {
  await Promise.all(children.map((c) => stopChild(c)));
}

// ---------------------------------------------------------------- helpers

function portIsFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ host: '127.0.0.1', port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

// Resolves once 127.0.0.1:port accepts a TCP connection (polled every 50 ms until deadline).
function waitForTcp(port, timeoutMs, what) {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const onAbort = (err) => {
      abortListeners.delete(onAbort);
      reject(err);
    };
    abortListeners.add(onAbort);
    const attempt = () => {
      if (abortError) return;
      const sock = net.connect({ host: '127.0.0.1', port });
      sock.once('connect', () => {
        sock.destroy();
        abortListeners.delete(onAbort);
        resolve();
      });
      sock.once('error', () => {
        sock.destroy();
        if (abortError) return;
        if (Date.now() >= until) {
          abortListeners.delete(onAbort);
          reject(new CheckFailure(`timed out after ${timeoutMs} ms waiting for ${what}`));
        } else {
          setTimeout(attempt, 50);
        }
      });
    };
    attempt();
  });
}

function pause(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + '\n');
}

// ---------------------------------------------------------------- the run

async function run(o, ev) {
  const cleanEnv = { ...process.env };
  for (const k of ['CXDS_TEACHING_TARGET', 'GRPC_XDS_BOOTSTRAP_CONFIG']) delete cleanEnv[k];

  // Refuse to run into leftovers from an earlier run.
  for (const port of [o.xdsPort, o.v1Port, o.v2Port]) {
    check(await portIsFree(port), `127.0.0.1:${port} is already in use`);
  }
  check(fs.existsSync(o.cxds), `control plane binary not found: ${o.cxds}`);
  if (o.client === 'cpp') check(fs.existsSync(o.cppClient), `C++ client not found: ${o.cppClient}`);

  const bootstrapFile = path.join(ev.dir, 'bootstrap.json');
  writeJson(bootstrapFile, {
    node: { id: NODE_ID, locality: {} },
    xds_servers: [{
      server_uri: `127.0.0.1:${o.xdsPort}`,
      channel_creds: [{ type: 'insecure' }],
      server_features: ['xds_v3'],
    }],
  });

  // Backends.
  const backends = {};
  for (const [name, port] of [['v1', o.v1Port], ['v2', o.v2Port]]) {
    backends[name] = spawnChild(`inventory-${name}`, process.execPath,
      [path.join(HERE, 'inventory_server.js'), '--name', name, '--port', String(port),
        '--exit-on-eof', '--max-seconds', String(o.deadlineSeconds + 30)],
      { env: cleanEnv, evidence: ev.dir });
  }
  for (const [name, b] of Object.entries(backends)) {
    await b.stdout.waitFor((e) => /"event":"listening"/.test(e.line), 10000, `inventory ${name} to listen`);
  }

  // Control plane; its stderr is the xDS log.
  const cxds = spawnChild('cxds', o.cxds,
    ['demo', '--xds-address', `127.0.0.1:${o.xdsPort}`, '--node-id', NODE_ID,
      '--inventory-port', String(o.v1Port)],
    { env: cleanEnv, evidence: ev.dir, stderrFile: 'xds.log' });
  const xlog = cxds.stderr;
  ev.xlog = xlog;
  await waitForTcp(o.xdsPort, 15000, `cxds to accept connections on 127.0.0.1:${o.xdsPort}`);
  say(`cxds is accepting on 127.0.0.1:${o.xdsPort}`);

  // Client factory.
  const clientEnv = {
    ...cleanEnv,
    GRPC_XDS_BOOTSTRAP: bootstrapFile,
    GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS: '100',
    CXDS_TEACHING_DEADLINE_MS: String(o.callDeadlineMs),
    CXDS_TEACHING_MAX_SECONDS: String(o.deadlineSeconds + 30),
  };
  let clientCount = 0;
  let callCount = 0; // request ids are unique across the run
  function startClient() {
    clientCount += 1;
    let cmd;
    let args;
    if (o.client === 'node') [cmd, args] = [process.execPath, [path.join(HERE, 'client_node.js')]];
    else if (o.client === 'python') [cmd, args] = [o.python, [path.join(HERE, 'client_python.py')]];
    else [cmd, args] = [o.cppClient, []];
    return spawnChild(`client-${clientCount}`, cmd, args, { env: clientEnv, evidence: ev.dir });
  }

  // One call through the client; resolves with the client's JSON reply plus timestamps and
  // the backend's log line for the same request_id (application-side evidence).
  async function call(client, label) {
    callCount += 1;
    const id = `${o.client}-${label}-${callCount}`;
    const sentAt = new Date().toISOString();
    const from = client.stdout.mark();
    send(client, `call ${id}`);
    const entry = await client.stdout.waitFor((e) => {
      try {
        return JSON.parse(e.line).request_id === id;
      } catch (err) {
        return false;
      }
    }, o.callDeadlineMs + 5000, `the reply of ${client.name} to "call ${id}"`, from);
    const reply = JSON.parse(entry.line);
    const result = { ...reply, sent_at: sentAt, replied_at: entry.ts };
    if (reply.ok && (reply.inventory === 'v1' || reply.inventory === 'v2')) {
      const b = backends[reply.inventory];
      const seen = await b.stdout.waitFor((e) => e.line.includes(`"request_id":${JSON.stringify(id)}`),
        2000, `inventory ${reply.inventory} to log request ${id}`).catch((err) => {
        if (abortError) throw err;
        return null;
      });
      result.backend_log = seen ? { ts: seen.ts, line: seen.line } : null;
    }
    say(`  call ${id}: ok=${reply.ok} inventory=${reply.inventory} port=${reply.port}` +
      (reply.ok ? '' : ` code=${reply.code} error=${reply.error}`));
    return result;
  }

  function servedBy(result, name) {
    return result.ok && result.inventory === name && result.backend_log !== null &&
      result.backend_log !== undefined;
  }

  // Calls until one is served by `name` (application log included), bounded in time and count;
  // consecutive attempts are paced 100 ms apart.
  async function callsUntil(client, label, name, timeoutMs) {
    const until = Date.now() + timeoutMs;
    const results = [];
    for (let attempt = 0; attempt < 100 && Date.now() < until; attempt++) {
      if (attempt > 0) await pause(100);
      const r = await call(client, label);
      results.push(r);
      if (servedBy(r, name)) return { results, served: true };
    }
    return { results, served: false };
  }

  function xdsLines(from, to = xlog.mark()) {
    return xlog.entries.slice(from, to).filter((e) => xdsEntry(e)).map((e) => ({ ts: e.ts, line: e.line }));
  }

  function waitXds(pred, timeoutMs, what, from) {
    return xlog.waitFor((e) => {
      const x = xdsEntry(e);
      return x !== null && pred(x);
    }, timeoutMs, what, from);
  }

  function waitAck(type, version, from, extra = () => true, timeoutMs = 15000) {
    return waitXds((x) => x.event === 'ACK' && x.node === NODE_ID && x.type === type && x.version === version &&
      extra(x), timeoutMs, `ACK of ${shortType(type)} version=${version}`, from);
  }

  // Sends a command to cxds and waits for its PUBLISHED line; an ERROR line fails at once.
  async function publish(command, expectVersion) {
    const from = cxds.stdout.mark();
    const xfrom = xlog.mark();
    const at = new Date().toISOString();
    send(cxds, command);
    const entry = await cxds.stdout.waitFor((e) => /^(PUBLISHED|ERROR)\b/.test(e.line), 10000,
      `cxds to answer "${command}"`, from);
    check(entry.line.startsWith('PUBLISHED'), `cxds answered "${command}" with: ${entry.line}`);
    const m = /\bversion=(\S+)/.exec(entry.line);
    check(m && m[1] === expectVersion, `"${command}" published ${m ? m[1] : '?'}, expected version ${expectVersion}`);
    say(`cxds: ${entry.line}`);
    return { command, sent_at: at, published: { ts: entry.ts, line: entry.line }, xlogFrom: xfrom };
  }

  function checkpoint(name, file, body) {
    ev.checkpoints.push({ name, file, result: 'RUNNING' });
    const record = ev.checkpoints[ev.checkpoints.length - 1];
    const startedAt = new Date().toISOString();
    const xfrom = xlog.mark();
    const doc = { checkpoint: name, client: o.client, started_at: startedAt };
    say(`checkpoint ${name}`);
    return body(doc, xfrom).then(() => {
      doc.result = 'PASS';
      record.result = 'PASS';
    }, (err) => {
      doc.result = 'FAIL';
      doc.failure = err.message;
      record.result = 'FAIL';
      throw err;
    }).finally(() => {
      doc.finished_at = new Date().toISOString();
      if (!doc.xds_log) doc.xds_log = xdsLines(xfrom);
      writeJson(path.join(ev.dir, file), doc);
      say(`checkpoint ${name}: ${doc.result} -> ${file}`);
    });
  }

  // 1. initial: version 1 is ACKed and a call is served by v1.
  let client = startClient();
  await checkpoint('initial', 'initial.json', async (doc, xfrom) => {
    doc.expectation = 'version 1 sent and ACKed for LDS/RDS/CDS/EDS; a call is served by inventory v1';
    const acks = {};
    for (const [k, t] of Object.entries(TYPE)) acks[k] = await waitAck(t, '1', xfrom);
    doc.acks = Object.fromEntries(Object.entries(acks).map(([k, e]) => [k, { ts: e.ts, line: e.line }]));
    // cxds announces version 1 on stdout at start-up; recorded when present, not required.
    const published = cxds.stdout.entries.find((e) => /^PUBLISHED\b.*\bversion=1\b/.test(e.line));
    doc.published = published ? { ts: published.ts, line: published.line } : null;
    const { results, served } = await callsUntil(client, 'initial', 'v1', 10000);
    doc.calls = results;
    check(served, 'no call was served by inventory v1');
  });

  // 2. updated: the endpoint moves to v2.
  await checkpoint('updated', 'updated.json', async (doc) => {
    doc.expectation = `"port ${o.v2Port}" publishes version 2; EDS version 2 is ACKed; calls reach inventory v2`;
    const p = await publish(`port ${o.v2Port}`, '2');
    doc.command = p.command;
    doc.command_sent_at = p.sent_at;
    doc.published = p.published;
    const ack = await waitAck(TYPE.eds, '2', p.xlogFrom);
    doc.eds_ack = { ts: ack.ts, line: ack.line };
    const { results, served } = await callsUntil(client, 'updated', 'v2', 10000);
    doc.calls = results;
    check(served, 'no call was served by inventory v2 after EDS version 2 was ACKed');
  });

  // 3. rejected-keeps-v2: an invalid route is NACKed and v2 keeps serving.
  await checkpoint('rejected-keeps-v2', 'rejected-keeps-v2.json', async (doc) => {
    doc.expectation = '"invalid" publishes version 3; the client NACKs RDS with sent_version=3 ' +
      'accepted_version=2; calls are still served by inventory v2';
    const p = await publish('invalid', '3');
    doc.command = p.command;
    doc.command_sent_at = p.sent_at;
    doc.published = p.published;
    const nack = await waitXds((x) => x.event === 'NACK' && x.node === NODE_ID && x.type === TYPE.rds &&
      x.sent_version === '3' && x.accepted_version === '2', 15000,
    'NACK of RDS with sent_version=3 accepted_version=2', p.xlogFrom);
    doc.nack = { ts: nack.ts, line: nack.line, error: xdsEntry(nack).error };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await call(client, 'rejected'));
    doc.calls = results;
    const rdsAck3 = xlog.since(p.xlogFrom).find((e) => {
      const x = xdsEntry(e);
      return x && x.event === 'ACK' && x.type === TYPE.rds && x.version === '3';
    });
    check(!rdsAck3, `RDS version 3 was ACKed although it is invalid: ${rdsAck3 && rdsAck3.line}`);
    check(results.every((r) => servedBy(r, 'v2')), 'after the NACK not every call was served by inventory v2');
  });

  // 4. recovered: a valid version 4 moves the endpoint back to v1.
  await checkpoint('recovered', 'recovered.json', async (doc) => {
    doc.expectation = `"port ${o.v1Port}" publishes version 4; RDS and EDS version 4 are ACKed; calls reach inventory v1`;
    const p = await publish(`port ${o.v1Port}`, '4');
    doc.command = p.command;
    doc.command_sent_at = p.sent_at;
    doc.published = p.published;
    const rds = await waitAck(TYPE.rds, '4', p.xlogFrom);
    const eds = await waitAck(TYPE.eds, '4', p.xlogFrom);
    doc.acks = { rds: { ts: rds.ts, line: rds.line }, eds: { ts: eds.ts, line: eds.line } };
    const { results, served } = await callsUntil(client, 'recovered', 'v1', 10000);
    doc.calls = results;
    check(served, 'no call was served by inventory v1 after version 4 was ACKed');
  });

  // 5. reconnected: a new client process opens a new ADS stream and gets version 4.
  await checkpoint('reconnected', 'reconnected.json', async (doc, xfrom) => {
    doc.expectation = 'after the client is killed its stream closes; a new client ACKs version 4 on a ' +
      'stream id not seen before; a call is served by inventory v1';
    const oldStreams = new Set(xlog.entries.map((e) => xdsEntry(e)).filter(Boolean).map((x) => x.stream));
    doc.old_streams = [...oldStreams];
    doc.killed = { name: client.name, pid: client.pid, signal: 'SIGTERM', at: new Date().toISOString() };
    await stopChild(client);
    doc.killed.exit = { code: client.code, signal: client.signal };
    const closed = await waitXds((x) => x.event === 'CLOSE' && oldStreams.has(x.stream), 10000,
      'CLOSE of the killed client\'s stream', xfrom);
    doc.old_stream_close = { ts: closed.ts, line: closed.line };
    client = startClient();
    const isNew = (x) => !oldStreams.has(x.stream);
    const eds = await waitAck(TYPE.eds, '4', xfrom, isNew, 20000);
    const newStream = xdsEntry(eds).stream;
    doc.new_stream = newStream;
    doc.new_stream_eds_ack = { ts: eds.ts, line: eds.line };
    const { results, served } = await callsUntil(client, 'reconnected', 'v1', 10000);
    doc.calls = results;
    check(served, 'the new client\'s calls were not served by inventory v1');
  });

  // Orderly shutdown. cxds's `status` (free text) is taken while the client is still
  // connected, so it shows the stream's sent and ACKed versions; it is recorded, not checked.
  const statusFrom = cxds.stdout.mark();
  send(cxds, 'status');
  await cxds.stdout.waitFor(() => true, 5000, 'cxds to answer "status"', statusFrom).catch((err) => {
    if (abortError) throw err;
  });
  ev.status = cxds.stdout.since(statusFrom).map((e) => e.line);
  send(client, 'quit');
  client.expectExit = true;
  if (!(await waitExit(client, 5000))) say(`${client.name} did not quit within 5 s`);
  cxds.expectExit = true;
  send(cxds, 'quit');
  const quit = await waitExit(cxds, 5000);
  ev.cxds_exit = { code: cxds.code, signal: cxds.signal };
  check(quit, 'cxds did not exit within 5 s of "quit"');
  check(cxds.code === 0, `cxds exited with code=${cxds.code} signal=${cxds.signal} after "quit"`);
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`run_checkpoints: ${e.message}\n${usage()}`);
    process.stdout.write(`FAIL: ${e.message}\n`);
    process.exit(2);
  }
  fs.mkdirSync(o.evidence, { recursive: true });
  transcript = fs.createWriteStream(path.join(o.evidence, 'run.log'));
  const ev = { dir: o.evidence, checkpoints: [] };
  say(`client=${o.client} cxds=${o.cxds} xds=127.0.0.1:${o.xdsPort} v1=127.0.0.1:${o.v1Port} ` +
    `v2=127.0.0.1:${o.v2Port} evidence=${o.evidence}`);

  const overall = setTimeout(() => abort(new CheckFailure(`overall deadline of ${o.deadlineSeconds} s exceeded`)),
    o.deadlineSeconds * 1000);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => abort(new CheckFailure(`run_checkpoints received ${sig}`)));
  }

  let failure = null;
  const running = run(o, ev);
  running.catch(() => {}); // an abort may settle the race first; run's own rejection is then moot
  try {
    await Promise.race([running, new Promise((resolve, reject) => abortListeners.add(reject))]);
  } catch (err) {
    failure = err instanceof CheckFailure ? err.message : (err && err.stack) || String(err);
  }
  if (!failure && abortError) failure = abortError.message;
  if (failure) abort(new CheckFailure(failure)); // ends any wait still pending
  clearTimeout(overall);

  for (const c of children) c.expectExit = true;
  await stopAll();
  const unmatched = (ev.xlog ? ev.xlog.entries : []).filter((e) => {
    const x = xdsEntry(e);
    return x && x.event === 'UNMATCHED';
  }).map((e) => ({ ts: e.ts, line: e.line }));
  if (unmatched.length) say(`note: ${unmatched.length} UNMATCHED line(s) in xds.log (listed in summary.json)`);
  const summary = {
    client: o.client,
    result: failure ? 'FAIL' : 'PASS',
    failure,
    started_at: new Date(T0).toISOString(),
    finished_at: new Date().toISOString(),
    ports: { xds: o.xdsPort, v1: o.v1Port, v2: o.v2Port },
    cxds: o.cxds,
    checkpoints: ev.checkpoints,
    unmatched,
    cxds_status: ev.status || null,
    cxds_exit: ev.cxds_exit || null,
    children: children.map((c) => ({ name: c.name, pid: c.pid, code: c.code, signal: c.signal })),
  };
  writeJson(path.join(o.evidence, 'summary.json'), summary);
  say(`evidence: ${o.evidence}`);
  const last = failure ? `FAIL: ${failure}` : 'PASS';
  fs.writeFileSync(path.join(o.evidence, 'result.txt'), last + '\n');
  if (transcript) transcript.write(last + '\n');
  process.stdout.write(last + '\n');
  const done = () => process.exit(failure ? 1 : 0);
  if (transcript) transcript.end(done);
  else done();
  setTimeout(done, 2000).unref();
}

main();
