/**
 * Selection at fleet scale (issue 15): 10,000 workers in one partition (or 1,250 workers x 8 DP
 * ranks), registered through the core, then the latency of `select` and `select_and_reserve` +
 * free over the whole fleet, and of the inspection calls whose answers grow with it.
 *
 *   npm run bench -- scale [--workers 10000] [--dp 1,8] [--tokens 2048] [--reps 200]
 *
 * Every worker holds a random-length prefix of one of 16 shared conversations (so the match has
 * real rows to rank), and 256 bookings are live. Latencies are percentiles of `--reps` calls.
 */
import { SelectionCore } from '../src/core/core.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { seededRng } from '../src/core/random.js';
import { Tier } from '../src/core/index/index-types.js';
import { blockHashes } from '../src/core/index/hashing.js';
import { quantile, timings } from './timings.js';

const BS = 16;

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

/** p50 and p99 of `reps` timed runs (ms), after 5 warm-up runs. */
async function percentiles(reps: number, f: (i: number) => unknown): Promise<[number, number]> {
  const ms = await timings(reps, 5, f);
  return [quantile(ms, 0.5), quantile(ms, 0.99)];
}

async function main(): Promise<void> {
  const ranks = Number(arg('--workers', '10000'));
  const dps = arg('--dp', '1,8').split(',').map(Number);
  const tokens = Number(arg('--tokens', '2048'));
  const reps = Number(arg('--reps', '200'));
  const rng = seededRng(7);
  const rows = ['| workers x dp ranks | register all s | select p50 / p99 ms | select_and_reserve + free p50 / p99 ms | GET /workers ms | GET /loads ms |',
    '|---|---|---|---|---|---|'];
  for (const dp of dps) {
    const workers = Math.ceil(ranks / dp);
    const core = SelectionCore.newLocal(parseRouterConfig({}), { rng: seededRng(1) });
    const convs = Array.from({ length: 16 }, () => Array.from({ length: tokens }, () => Math.floor(rng.next() * 128_000)));
    const t0 = performance.now();
    for (let w = 1; w <= workers; w++) {
      const eps: Record<string, string> = {};
      for (let r = 0; r < dp; r++) eps[String(r)] = `tcp://10.0.${w >> 8}.${w & 255}:${5557 + r}`;
      core.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://10.0.${w >> 8}.${w & 255}:8000`, block_size: BS,
        data_parallel_size: dp, kv_events_endpoints: eps });
    }
    const register = (performance.now() - t0) / 1000;
    const part = core.partition('m', 'default')!;
    const locals = convs.map((c) => blockHashes(c, BS));
    for (let w = 1; w <= workers; w++) {
      for (let r = 0; r < dp; r++) {
        const l = locals[(w + r) % 16].slice(0, Math.floor(rng.next() * (tokens / BS)));
        part.index.stored(BigInt(w), r, Tier.Device, null, l.map((local, i) => ({ ext: (BigInt(w) << 24n) + BigInt(r * 4096 + i), local })));
      }
    }
    const prompt = (i: number): number[] => [...convs[i & 15], ...Array.from({ length: 64 }, (_, k) => ((i + 8) * 64 + k) % 128_000)];
    for (let i = 0; i < 256; i++) await core.selectAndReserve({ model_name: 'm', selection_id: `live-${i}`, token_ids: prompt(i) });
    const [s50, s99] = await percentiles(reps, (i) => core.select({ model_name: 'm', token_ids: prompt(i) }));
    const [b50, b99] = await percentiles(reps, async (i) => {
      const id = `b-${i}`;
      await core.selectAndReserve({ model_name: 'm', selection_id: id, token_ids: prompt(i) });
      core.freeReservation(id);
    });
    const [w50] = await percentiles(5, () => core.listWorkers());
    const [l50] = await percentiles(5, () => core.loads());
    rows.push(`| ${workers.toLocaleString()} x ${dp} | ${register.toFixed(1)} | ${s50.toFixed(2)} / ${s99.toFixed(2)} | `
      + `${b50.toFixed(2)} / ${b99.toFixed(2)} | ${w50.toFixed(1)} | ${l50.toFixed(1)} |`);
    for (const p of core.partitionList()) p.destroy();
  }
  console.log(rows.join('\n'));
}

void main();
