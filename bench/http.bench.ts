/**
 * The HTTP layer end to end, without sockets: Fastify's `inject` through the whole stack (body
 * parse, zod, selection, serialize) on realistic bodies, next to `GET /health` (the framework
 * floor) and to the same selections called on the service directly (no HTTP), so the rows show
 * what the HTTP layer adds to a selection. The last rows repeat the hash-form `/select` on apps
 * that log as `select-service` does at `--log-level info` (JSON lines written synchronously to
 * /dev/null): with the one `request completed` line per request at info, and with it at debug
 * (so not written), which is what the request-log level costs.
 *
 *   npm run bench -- http
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Bench, type Task } from 'tinybench';
import { buildApp } from '../src/http/app.js';
import { parseJson, stringifyJson } from '../src/core/wire/json.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { SelectionServiceBuilder } from '../src/service/service.js';
import { seededRng } from '../src/core/random.js';

const WORKERS = 16;

async function main(time = 500): Promise<void> {
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  const app = await buildApp(service);
  await app.ready();
  const devNull = openSync('/dev/null', 'w');
  const stream = { write: (line: string): void => { writeSync(devNull, line); } };
  const logged = {
    info: await buildApp(service, { logger: { level: 'info', stream }, requestLogLevel: 'info' }),
    debug: await buildApp(service, { logger: { level: 'info', stream }, requestLogLevel: 'debug' }),
  };
  for (let w = 1; w <= WORKERS; w++) {
    service.upsertWorker({ worker_id: w, model_name: 'model', endpoint: `http://worker-${w}:8000`, block_size: 16 });
  }
  const r = seededRng(7).next;
  const i64 = (): bigint => BigInt.asIntN(64, (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32)));
  const tokens = { model_name: 'model', selection_id: 'bench', token_ids: Array.from({ length: 2048 }, () => Math.floor(r() * 128_000)) };
  const hashes = {
    model_name: 'model', selection_id: 'bench', isl_tokens: 2048,
    block_hashes: Array.from({ length: 128 }, i64), sequence_hashes: Array.from({ length: 128 }, i64),
  };
  const bodies = { tokens: stringifyJson(tokens), hashes: stringifyJson(hashes) };
  const post = async (url: string, payload: string, on = app): Promise<unknown> => {
    const res = await on.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    return res.body;
  };
  let n = 0;
  const cases: [string, () => Promise<unknown>][] = [
    ['http GET /health', () => app.inject({ method: 'GET', url: '/health' })],
    [`http POST /select tokens=2048 workers=${WORKERS}`, () => post('/select', bodies.tokens)],
    [`direct select tokens=2048 workers=${WORKERS}`, () => service.select(parseJson(bodies.tokens))],
    [`http POST /select hashes=128 workers=${WORKERS}`, () => post('/select', bodies.hashes)],
    [`direct select hashes=128 workers=${WORKERS}`, () => service.select(parseJson(bodies.hashes))],
    [`http POST /select_and_reserve + DELETE hashes=128 workers=${WORKERS}`, async () => {
      const id = `b${n++}`;
      await post('/select_and_reserve', bodies.hashes.replace('"bench"', `"${id}"`));
      return app.inject({ method: 'DELETE', url: `/reservations/${id}` });
    }],
    [`http POST /select hashes=128, log level info, request line at info`, () => post('/select', bodies.hashes, logged.info)],
    [`http POST /select hashes=128, log level info, request line at debug`, () => post('/select', bodies.hashes, logged.debug)],
  ];
  const bench = new Bench({ time, warmupTime: 200 });
  for (const [name, fn] of cases) bench.add(name, fn);
  await bench.run();
  const row = (t: Task | undefined): string => {
    const res = t?.result;
    if (!res || res.state !== 'completed') throw new Error(`${t?.name ?? '?'} did not complete`);
    return `${(res.latency.p50 * 1000).toFixed(1).padStart(8)} µs p50 ${(res.latency.p99 * 1000).toFixed(1).padStart(8)} µs p99 ${(1000 / res.latency.p50).toFixed(0).padStart(7)} ops/s`;
  };
  console.log(`bodies: tokens ${bodies.tokens.length} B, hashes ${bodies.hashes.length} B`);
  for (const [name] of cases) console.log(`${name.padEnd(70)} ${row(bench.getTask(name))}`);
  await app.close();
  await logged.info.close();
  await logged.debug.close();
  closeSync(devNull);
  await service.shutdown();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
