#!/usr/bin/env node
// Teaching inventory backend: one unary gRPC method, /cxds.teaching.Inventory/GetQuote,
// whose messages are UTF-8 JSON (no .proto). It only ever listens on a loopback address
// (127.0.0.1 unless --host names another of 127.0.0.0/8, as pods of one port would use).
//
//   node examples/teaching/inventory_server.js --name v1 --port 18080
//
// Request  {"sku": "...", "request_id": "..."}
// Response {"inventory": "<name>", "port": <port>, "sku": "...", "request_id": "..."}
//
// stdout carries one JSON object per line (application-side evidence):
//   {"event":"listening", ...} once the port is bound, then {"event":"request", ...} for every
//   call, written before the response is sent.
// Options:
//   --exit-on-eof     exit when stdin reaches end of file (used by run_checkpoints.js, so the
//                     backend goes away with its parent even if the parent is killed)
//   --max-seconds N   exit by itself after N seconds (default 900; 0 disables)
//   --fail-every N    answer every Nth call (the 1st, N+1st, ...) with UNAVAILABLE instead (a
//                     flaky backend, for retry tests; default 0: never)
'use strict';

const grpc = require('@grpc/grpc-js');

const METHOD_PATH = '/cxds.teaching.Inventory/GetQuote';

function parseArgs(argv) {
  const opts = { name: 'v1', host: '127.0.0.1', port: 18080, exitOnEof: false, maxSeconds: 900, failEvery: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--name') opts.name = next();
    else if (a === '--port') opts.port = Number(next());
    else if (a === '--host') opts.host = next();
    else if (a === '--exit-on-eof') opts.exitOnEof = true;
    else if (a === '--max-seconds') opts.maxSeconds = Number(next());
    else if (a === '--fail-every') opts.failEvery = Number(next());
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: inventory_server.js --name v1 --port 18080 [--host 127.0.0.N] [--exit-on-eof] [--max-seconds N] [--fail-every N]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > 65535) {
    throw new Error(`bad --port ${opts.port}`);
  }
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(opts.host) || opts.host.split('.').some((b) => Number(b) > 255)) {
    throw new Error(`bad --host ${opts.host}: only 127.0.0.0/8`);
  }
  if (!Number.isFinite(opts.maxSeconds) || opts.maxSeconds < 0) {
    throw new Error(`bad --max-seconds ${opts.maxSeconds}`);
  }
  if (!Number.isInteger(opts.failEvery) || opts.failEvery < 0) {
    throw new Error(`bad --fail-every ${opts.failEvery}`);
  }
  return opts;
}

function emit(obj) {
  process.stdout.write(JSON.stringify({ ts: new Date().toISOString(), ...obj }) + '\n');
}

function encodeJson(value) {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

function decodeJson(bytes) {
  return JSON.parse(Buffer.from(bytes).toString('utf8'));
}

function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`inventory_server: ${e.message}\n`);
    process.exit(2);
  }

  const service = {
    GetQuote: {
      path: METHOD_PATH,
      requestStream: false,
      responseStream: false,
      requestSerialize: encodeJson,
      requestDeserialize: decodeJson,
      responseSerialize: encodeJson,
      responseDeserialize: decodeJson,
    },
  };

  const server = new grpc.Server();
  let calls = 0;
  server.addService(service, {
    GetQuote(call, callback) {
      const req = call.request && typeof call.request === 'object' ? call.request : {};
      calls++;
      if (opts.failEvery > 0 && (calls - 1) % opts.failEvery === 0) {
        emit({ event: 'failed', method: METHOD_PATH, peer: call.getPeer(), inventory: opts.name, call: calls });
        callback({ code: grpc.status.UNAVAILABLE, details: `${opts.name}: call ${calls} fails (--fail-every ${opts.failEvery})` });
        return;
      }
      const reply = {
        inventory: opts.name,
        port: opts.port,
        sku: req.sku === undefined ? null : req.sku,
        request_id: req.request_id === undefined ? null : req.request_id,
      };
      emit({ event: 'request', method: METHOD_PATH, peer: call.getPeer(), ...reply });
      callback(null, reply);
    },
  });

  let stopping = false;
  function stop(reason, code) {
    if (stopping) return;
    stopping = true;
    emit({ event: 'stopping', inventory: opts.name, port: opts.port, reason });
    // Bounded: a graceful shutdown gets one second, then everything is cut.
    const force = setTimeout(() => {
      server.forceShutdown();
      process.exit(code);
    }, 1000);
    force.unref();
    server.tryShutdown(() => process.exit(code));
  }

  server.bindAsync(`${opts.host}:${opts.port}`, grpc.ServerCredentials.createInsecure(), (err, boundPort) => {
    if (err) {
      process.stderr.write(`inventory_server: bind ${opts.host}:${opts.port} failed: ${err.message}\n`);
      process.exit(1);
    }
    emit({ event: 'listening', inventory: opts.name, address: `${opts.host}:${boundPort}`, pid: process.pid });
  });

  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGINT', () => stop('SIGINT', 0));
  if (opts.exitOnEof) {
    process.stdin.on('end', () => stop('stdin closed', 0));
    process.stdin.on('error', () => stop('stdin error', 0));
    process.stdin.resume();
  }
  if (opts.maxSeconds > 0) {
    setTimeout(() => stop(`max-seconds ${opts.maxSeconds} reached`, 0), opts.maxSeconds * 1000).unref();
  }
}

main();
