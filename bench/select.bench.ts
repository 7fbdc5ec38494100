/**
 * Selection benchmark: `SelectionCore.select` (query) and `select_and_reserve` + free, end to
 * end in the core (schema parse, prompt hashing in wasm, tiered match, load projection, cost,
 * pick, booking), against the wasm hashing + match alone as the interop-cost baseline.
 *
 *   node build/dist/bench/select.bench.js [--workers 8,32,128,1024,8000] [--tokens 2048] [--routing-policy NAME]
 *
 * Setup per W: W workers (dp 1, block size 16), each holding a random-length prefix (0..100%)
 * of one of 4 shared 2048-token conversations in its device tier, and 16 live bookings spread
 * over the workers (so load projection and decode dedup do real work). Each call routes one of
 * the 4 conversations plus a random suffix.
 */
import { Bench } from 'tinybench';
import { SelectionCore } from '../src/core/core.js';
import { seededRng } from '../src/core/random.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { Tier } from '../src/core/index/index-types.js';
import { blockHashes, hashBlocksToScratch, PUBLIC_SEED } from '../src/core/index/hashing.js';

const BS = 16;

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

function setup(workers: number, tokens: number, routingPolicy: string) {
  const r = seededRng(workers).next;
  const core = SelectionCore.newLocal(parseRouterConfig(routingPolicy ? { SELECT_SERVICE_ROUTING_POLICY: routingPolicy } : {}), { rng: seededRng(1) });
  const convs = Array.from({ length: 4 }, () => Array.from({ length: tokens }, () => Math.floor(r() * 128_000)));
  for (let w = 1; w <= workers; w++) core.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://w${w}`, block_size: BS, kv_events_endpoint: `tcp://127.0.0.1:${20000 + w}` });
  const part = core.partition('m', 'default')!;
  for (let w = 1; w <= workers; w++) {
    const conv = convs[w % 4];
    const locals = blockHashes(conv.slice(0, Math.floor(r() * conv.length)), BS);
    part.index.stored(BigInt(w), 0, Tier.Device, null, locals.map((l, i) => ({ ext: BigInt(w) * 1_000_000n + BigInt(i), local: l })));
  }
  const prompt = (i: number): number[] => [...convs[i % 4], ...Array.from({ length: 64 }, () => Math.floor(r() * 128_000))];
  const prompts = Array.from({ length: 64 }, (_, i) => prompt(i));
  return { core, prompts };
}

async function main(): Promise<void> {
  const workerCounts = arg('--workers', '8,32,128,1024,8000').split(',').map(Number);
  const tokens = Number(arg('--tokens', '2048'));
  const routingPolicy = arg('--routing-policy', '');
  const rows: string[] = ['| case | p50 µs | p99 µs | ops/s |', '|---|---|---|---|'];
  for (const W of workerCounts) {
    const { core, prompts } = setup(W, tokens, routingPolicy);
    for (let i = 0; i < 16; i++) await core.selectAndReserve({ model_name: 'm', selection_id: `live-${i}`, token_ids: prompts[i] });
    let k = 0, id = 0;
    const part = core.partition('m', 'default')!;
    const bench = new Bench({ time: 1500, warmupTime: 300 });
    bench.add(`baseline: hash + match W=${W} tokens=${tokens + 64}`, () => {
      const p = prompts[k++ & 63];
      const n = hashBlocksToScratch(p, BS, PUBLIC_SEED);
      part.index.matchScratch(n, p.length, { overlapScoreCredit: 1, hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25 });
    });
    bench.add(`select W=${W} tokens=${tokens + 64}`, async () => {
      await core.select({ model_name: 'm', token_ids: prompts[k++ & 63] });
    });
    bench.add(`select_and_reserve + free W=${W} tokens=${tokens + 64}`, async () => {
      const sid = `b${id++}`;
      await core.selectAndReserve({ model_name: 'm', selection_id: sid, token_ids: prompts[k++ & 63] });
      core.freeReservation(sid);
    });
    await bench.run();
    for (const t of bench.tasks) {
      const res = t.result as { latency?: { p50?: number; p99?: number }; throughput?: { mean?: number } } | undefined;
      const l = res?.latency;
      rows.push(`| ${t.name} | ${((l?.p50 ?? 0) * 1000).toFixed(1)} | ${((l?.p99 ?? 0) * 1000).toFixed(1)} | ${Math.round(res?.throughput?.mean ?? 0).toLocaleString()} |`);
    }
  }
  console.log(rows.join('\n'));
}

void main();
