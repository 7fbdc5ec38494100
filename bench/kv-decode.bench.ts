/**
 * KV-event batch decode throughput, in blocks/s.
 *
 * Workload: one batch of 64 BlockStored events x 32 blocks (16-token blocks, so 512 token ids
 * per event), uint64 block hashes >= 2^63 (msgpack `cf`, the case msgpackr turns into BigInt),
 * token ids < 2^32 (mostly `ce`). Encoded with msgpackr in two layouts: vLLM v0.26 style
 * (`[ts, events, dp_rank]` with map events) and the positional (array-event) layout.
 *
 * Compared:
 *   - `KvBatchDecoder.decode` (hashes -> u32 pairs, tokens -> Uint32Array, one pass);
 *   - baseline: msgpackr `unpack` + per-hash BigInt normalisation into a BigUint64Array and a
 *     token copy into a Uint32Array (what a straightforward consumer would write).
 *
 * Run: `npx tsc -p tsconfig.json && node build/dist/bench/kv-decode.bench.js`
 */
import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';
import { Packr, unpack } from 'msgpackr';
import { KvBatchDecoder } from '../src/service/kv-events/decode.js';

const EVENTS = 64, BLOCKS_PER_EVENT = 32, BLOCK_SIZE = 16;
const BLOCKS = EVENTS * BLOCKS_PER_EVENT;

/** Deterministic workload (xorshift), so runs are comparable. */
function makeBatch(layout: 'map-events' | 'positional'): Uint8Array {
  let s = 0x2545f491;
  const next = (): number => { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return s >>> 0; };
  const hash = (): bigint => (1n << 63n) | (BigInt(next() & 0x7fffffff) << 32n) | BigInt(next());
  let parent: bigint | null = null;
  const events: unknown[] = [];
  for (let e = 0; e < EVENTS; e++) {
    const block_hashes = Array.from({ length: BLOCKS_PER_EVENT }, hash);
    const token_ids = Array.from({ length: BLOCKS_PER_EVENT * BLOCK_SIZE }, () => 1000 + (next() % 150_000));
    const extra_keys = Array.from({ length: BLOCKS_PER_EVENT }, () => null);
    events.push(layout === 'map-events'
      ? { type: 'BlockStored', block_hashes, parent_block_hash: parent, token_ids, block_size: BLOCK_SIZE, lora_id: null,
          medium: 'GPU', lora_name: null, extra_keys, group_idx: 0, kv_cache_spec_kind: 'full_attention' }
      : ['BlockStored', block_hashes, parent, token_ids, BLOCK_SIZE, null, 'GPU', null, extra_keys, 0, 'full_attention', null]);
    parent = block_hashes[BLOCKS_PER_EVENT - 1];
  }
  return new Packr({ useRecords: false }).pack([1700000000.25, events, 0]);
}

type RawEvent = unknown[] | { block_hashes: (number | bigint)[]; token_ids: number[] };
const baseHashes = new BigUint64Array(BLOCKS);
const baseTokens = new Uint32Array(BLOCKS * BLOCK_SIZE);
/** Baseline consumer: generic msgpackr decode, then normalise every hash through BigInt. */
function baseline(payload: Uint8Array): number {
  const batch = unpack(payload) as [number, RawEvent[], number];
  let h = 0, t = 0;
  for (const ev of batch[1]) {
    const hashes = (Array.isArray(ev) ? ev[1] : ev.block_hashes) as (number | bigint)[];
    const tokens = (Array.isArray(ev) ? ev[3] : ev.token_ids) as number[];
    for (const x of hashes) baseHashes[h++] = BigInt.asUintN(64, typeof x === 'bigint' ? x : BigInt(x));
    for (const x of tokens) baseTokens[t++] = x;
  }
  return h;
}

/** Runs the benchmark and prints blocks/s per task; returns the rows for programmatic use. */
export async function main(): Promise<{ name: string; blocksPerSec: number; meanUs: number }[]> {
  const decoder = new KvBatchDecoder();
  const payloads = { 'map-events': makeBatch('map-events'), positional: makeBatch('positional') };
  // Sanity: both decoders see the same blocks before we time anything.
  for (const p of Object.values(payloads)) {
    const b = decoder.decode(p);
    if (b.hashCount !== BLOCKS || baseline(p) !== BLOCKS) throw new Error('bench workload mis-decoded');
    for (let i = 0; i < BLOCKS; i++) {
      if (((BigInt(b.hashes[2 * i + 1]) << 32n) | BigInt(b.hashes[2 * i])) !== baseHashes[i]) throw new Error(`hash ${i} differs`);
    }
  }
  let sink = 0;
  const bench = new Bench({ time: 1500, warmupTime: 300 });
  for (const [layout, p] of Object.entries(payloads)) {
    bench.add(`KvBatchDecoder ${layout}`, () => { sink += decoder.decode(p).hashCount; });
    bench.add(`msgpackr unpack + BigInt ${layout}`, () => { sink += baseline(p); });
  }
  await bench.run();
  const rows = bench.tasks.map((task) => {
    const r = task.result as { state: string; period?: number };
    const meanMs = r.state === 'completed' && r.period ? r.period : NaN;
    return { name: task.name, blocksPerSec: BLOCKS / (meanMs / 1000), meanUs: meanMs * 1000 };
  });
  console.log(`batch: ${EVENTS} events x ${BLOCKS_PER_EVENT} blocks x ${BLOCK_SIZE} tokens; payload ${payloads['map-events'].length} B (map events), ${payloads.positional.length} B (positional)`);
  console.table(rows.map((r) => ({ task: r.name, 'blocks/s': Math.round(r.blocksPerSec).toLocaleString('en-US'), 'µs/batch': r.meanUs.toFixed(1) })));
  if (sink === -1) console.log(sink); // keep the work observable
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
