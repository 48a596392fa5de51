#!/usr/bin/env node
// Long-lived proxyless gRPC xDS client (Node: @grpc/grpc-js + @grpc/grpc-js-xds).
//
//   GRPC_XDS_BOOTSTRAP=/path/bootstrap.json node examples/teaching/client_node.js
//
// Commands on stdin, one per line, handled strictly in order:
//   call <request_id>   one unary call of /cxds.teaching.Inventory/GetQuote on xds:///quote;
//                       prints exactly one JSON line:
//                       {"request_id","ok","inventory","port","error","code","elapsed_ms"}
//   quit                exit 0 (end of stdin does the same)
// Nothing else is written to stdout; diagnostics go to stderr.
//
// Environment:
//   GRPC_XDS_BOOTSTRAP        bootstrap file (read by grpc-js-xds)
//   CXDS_TEACHING_TARGET      testing only: another target, e.g. dns:///127.0.0.1:18080
//   CXDS_TEACHING_DEADLINE_MS per-call deadline (default 3000)
//   CXDS_TEACHING_MAX_SECONDS exit by itself after this many seconds (default 900; 0 disables)
'use strict';

const readline = require('readline');
const grpc = require('@grpc/grpc-js');
const grpcXds = require('@grpc/grpc-js-xds');

const METHOD_PATH = '/cxds.teaching.Inventory/GetQuote';
const TARGET = process.env.CXDS_TEACHING_TARGET || 'xds:///quote';
const DEADLINE_MS = Number(process.env.CXDS_TEACHING_DEADLINE_MS || 3000);
const MAX_SECONDS = Number(process.env.CXDS_TEACHING_MAX_SECONDS || 900);

grpcXds.register();

const client = new grpc.Client(TARGET, grpc.credentials.createInsecure());
// Leave IDLE right away so the ADS stream is opened before the first call.
client.getChannel().getConnectivityState(true);

function encodeJson(value) {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

function decodeJson(bytes) {
  return JSON.parse(Buffer.from(bytes).toString('utf8'));
}

function print(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function callOnce(requestId) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const elapsed = () => Number((process.hrtime.bigint() - started) / 1000000n);
    const deadline = new Date(Date.now() + DEADLINE_MS);
    client.makeUnaryRequest(
      METHOD_PATH,
      encodeJson,
      decodeJson,
      { sku: 'paper', request_id: requestId },
      new grpc.Metadata(),
      { deadline },
      (err, reply) => {
        if (err) {
          resolve({
            request_id: requestId, ok: false, inventory: null, port: null,
            error: err.details || err.message, code: err.code, elapsed_ms: elapsed(),
          });
          return;
        }
        const ok = reply && reply.request_id === requestId;
        resolve({
          request_id: requestId,
          ok: Boolean(ok),
          inventory: reply ? reply.inventory : null,
          port: reply ? reply.port : null,
          error: ok ? null : 'reply does not echo the request_id',
          code: 0,
          elapsed_ms: elapsed(),
        });
      });
  });
}

let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  try {
    client.close();
  } catch (e) {
    // closing is best effort
  }
  process.exit(code);
}

// Commands are processed one at a time so output order equals input order.
let chain = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', (line) => {
  const parts = line.trim().split(/\s+/).filter(Boolean);
  if (parts.length === 0) return;
  chain = chain.then(async () => {
    if (finished) return;
    if (parts[0] === 'call' && parts.length === 2) {
      print(await callOnce(parts[1]));
    } else if (parts[0] === 'quit') {
      finish(0);
    } else {
      process.stderr.write(`client_node: ignoring unknown command: ${line}\n`);
    }
  });
});
rl.on('close', () => {
  chain = chain.then(() => finish(0));
});

if (MAX_SECONDS > 0) {
  setTimeout(() => {
    process.stderr.write(`client_node: max lifetime of ${MAX_SECONDS}s reached\n`);
    finish(3);
  }, MAX_SECONDS * 1000).unref();
}
