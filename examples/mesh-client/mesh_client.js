#!/usr/bin/env node
// A proxyless gRPC xDS client (@grpc/grpc-js + @grpc/grpc-js-xds) for the example mesh: makes
// a fixed number of calls of /cxds.teaching.Inventory/GetQuote and prints, as one JSON line,
// which inventory answered how often.
//
//   GRPC_XDS_BOOTSTRAP=bootstrap.json node examples/mesh-client/mesh_client.js \
//       --target xds:///inventory.mesh.local:8080 --calls 200 [--header x-canary=yes]
//
// Output: {"calls":N,"ok":N,"errors":N,"by_inventory":{"v1":160,"v2":40},"by_port":{...},
//          "by_code":{"0":190,"14":10},"min_ms":1.2,"max_ms":9.8,"first_error":"..."}
// (by_code: gRPC status codes; min_ms/max_ms: the fastest and slowest call, as the client saw it)
// Bounded: at most --calls calls, each with a deadline (--deadline-ms, default 3000), with
// --interval-ms between them (at most 1000); with --hold-ms the channel stays open that long
// afterwards (at most 60 s).
'use strict';

const grpc = require('@grpc/grpc-js');
const grpcXds = require('@grpc/grpc-js-xds');

const METHOD_PATH = '/cxds.teaching.Inventory/GetQuote';

function parseArgs(argv) {
  const opts = { target: 'xds:///inventory.mesh.local:8080', calls: 100, headers: [], deadlineMs: 3000, holdMs: 0, intervalMs: 0 };
  for (let i = 0; i < argv.length; i++) {
    const next = () => argv[++i];
    switch (argv[i]) {
      case '--target': opts.target = next(); break;
      case '--calls': opts.calls = Math.min(Number(next()), 100000); break;
      case '--header': opts.headers.push(next().split('=')); break;
      case '--deadline-ms': opts.deadlineMs = Number(next()); break;
      case '--hold-ms': opts.holdMs = Math.min(Number(next()), 60000); break;
      case '--interval-ms': opts.intervalMs = Math.min(Number(next()), 1000); break;
      default: throw new Error(`unknown option ${argv[i]}`);
    }
  }
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  grpcXds.register();
  const client = new grpc.Client(opts.target, grpc.credentials.createInsecure());
  const encode = (v) => Buffer.from(JSON.stringify(v), 'utf8');
  const decode = (b) => JSON.parse(Buffer.from(b).toString('utf8'));
  const result = { calls: 0, ok: 0, errors: 0, by_inventory: {}, by_port: {}, by_code: {}, min_ms: null, max_ms: null,
    first_error: null };
  const count = (code, ms) => {
    result.by_code[code] = (result.by_code[code] || 0) + 1;
    result.min_ms = result.min_ms === null ? ms : Math.min(result.min_ms, ms);
    result.max_ms = result.max_ms === null ? ms : Math.max(result.max_ms, ms);
  };
  for (let n = 0; n < opts.calls; n++) {
    const metadata = new grpc.Metadata();
    for (const [k, v] of opts.headers) metadata.set(k, v);
    result.calls++;
    const started = process.hrtime.bigint();
    const elapsedMs = () => Number(process.hrtime.bigint() - started) / 1e6;
    try {
      const reply = await new Promise((resolve, reject) => {
        client.makeUnaryRequest(METHOD_PATH, encode, decode, { sku: 'sku-1', request_id: `r${n}` }, metadata,
          { deadline: Date.now() + opts.deadlineMs }, (err, value) => (err ? reject(err) : resolve(value)));
      });
      result.ok++;
      count(0, elapsedMs());
      result.by_inventory[reply.inventory] = (result.by_inventory[reply.inventory] || 0) + 1;
      result.by_port[reply.port] = (result.by_port[reply.port] || 0) + 1;
    } catch (err) {
      result.errors++;
      count(err.code, elapsedMs());
      if (result.first_error === null) result.first_error = `${err.code}: ${err.details || err.message}`;
    }
    if (opts.intervalMs > 0) await new Promise((r) => setTimeout(r, opts.intervalMs));
  }
  process.stdout.write(JSON.stringify(result) + '\n');
  // --hold-ms: keep the xDS stream open a while (to watch what it is pushed).
  if (opts.holdMs > 0) await new Promise((r) => setTimeout(r, opts.holdMs));
  client.close();
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`mesh_client: ${err.stack || err}\n`);
  process.exit(2);
});
