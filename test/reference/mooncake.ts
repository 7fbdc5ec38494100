/**
 * Mooncake trace replay (kvcache-ai/Mooncake FAST'25 traces, one JSON request a line:
 * `{"timestamp", "input_length", "output_length", "hash_ids"}`, 512 tokens per hash_id).
 *
 * Each hash_id expands into `512 / blockSize` blocks; block `sub` of id `id` gets the local hash
 * {@link hashIdToU64}`(id, sub)` and a distinct engine ext hash {@link hashIdToExt}`(id, sub)`
 * (a different mixing, so local != ext). In the trace equal ids always sit at equal positions
 * under equal parents, so a per-(id, sub) ext is a consistent prefix identity.
 *
 * {@link replayMooncake} drives any {@link PrefixIndexModel} with the trace: match, round-robin
 * store of the missing suffix, per-worker LRU eviction. Used by tests and the benchmark;
 * deterministic and allocation-light. No `node:` imports.
 */
import { Tier } from '../../src/core/index/index-types.js';
import type { BlockRef, MatchRow, PrefixIndexModel } from '../../src/core/index/index-types.js';
import { fmix64, splitmix64 } from './workload.js';

/** Tokens per Mooncake hash_id. */
export const MOONCAKE_BLOCK_TOKENS = 512;

/** One parsed trace request, with its expanded block chain. */
export interface MooncakeRequest {
  timestamp: number;
  inputLength: number;
  outputLength: number;
  hashIds: number[];
  /** Local hashes of the chain (what a request matches with). */
  locals: bigint[];
  /** The chain as store blocks (ext + local), root first. */
  blocks: BlockRef[];
}

const LOCAL_SALT = 0x6a09e667f3bcc908n;
const EXT_SALT = 0xbb67ae8584caa73bn;

/** Stable local hash of sub-block `sub` of trace hash_id `id` (splitmix64 of (id, sub)). */
export function hashIdToU64(id: number, sub: number): bigint {
  return splitmix64(((BigInt(id) << 16n) | BigInt(sub)) ^ LOCAL_SALT);
}

/** Stable engine ext hash of sub-block `sub` of `id` (fmix64, an unrelated mixing). */
export function hashIdToExt(id: number, sub: number): bigint {
  return fmix64(((BigInt(id) << 16n) | BigInt(sub)) ^ EXT_SALT);
}

function subBlocks(blockSize: number): number {
  const per = MOONCAKE_BLOCK_TOKENS / blockSize;
  if (!Number.isInteger(per) || per < 1 || per > 65536) {
    throw new RangeError(`block size ${blockSize} must divide ${MOONCAKE_BLOCK_TOKENS}`);
  }
  return per;
}

/** Parse one trace line; `blockSize` (default 512) must divide 512. */
export function parseMooncakeLine(line: string, blockSize = MOONCAKE_BLOCK_TOKENS): MooncakeRequest {
  const per = subBlocks(blockSize);
  const j = JSON.parse(line) as { timestamp: number; input_length: number; output_length: number; hash_ids: number[] };
  if (!Array.isArray(j.hash_ids)) throw new TypeError('trace line without hash_ids');
  const locals: bigint[] = [];
  const blocks: BlockRef[] = [];
  for (const id of j.hash_ids) {
    for (let sub = 0; sub < per; sub++) {
      const local = hashIdToU64(id, sub);
      locals.push(local);
      blocks.push({ ext: hashIdToExt(id, sub), local });
    }
  }
  return {
    timestamp: j.timestamp, inputLength: j.input_length, outputLength: j.output_length,
    hashIds: j.hash_ids, locals, blocks,
  };
}

/** Parse a whole JSONL trace (blank lines ignored); `limit` keeps only the first requests. */
export function parseMooncake(text: string, opts: { blockSize?: number; limit?: number } = {}): MooncakeRequest[] {
  const out: MooncakeRequest[] = [];
  const limit = opts.limit ?? Infinity;
  let start = 0;
  while (start < text.length && out.length < limit) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end).trim();
    if (line.length > 0) out.push(parseMooncakeLine(line, opts.blockSize));
    start = end + 1;
  }
  return out;
}

/** Options of {@link replayMooncake}. */
export interface ReplayOptions {
  /** Workers are slots 0..workers-1; request i goes to worker i % workers. */
  workers: number;
  /** Per-worker device capacity in blocks (LRU eviction above it). */
  capacityBlocks: number;
  /** Called with each request's match rows (before its store), and the request's index. */
  onMatch?: (rows: MatchRow[], request: number) => void;
}

/** Counters of one replay. */
export interface ReplayStats {
  requests: number;
  /** Blocks referenced by all requests. */
  blocks: number;
  /** Sum over requests of the best device match (blocks) across workers. */
  bestMatchedBlocks: number;
  /** Sum over requests of the device match (blocks) of the worker the request was sent to. */
  targetMatchedBlocks: number;
  storedBlocks: number;
  evictedBlocks: number;
  /** Store/remove answers that differ from the driver's own bookkeeping (0 for a correct index). */
  mismatches: number;
}

/**
 * Replay `requests` into `index`. For each request: `match` its local chain; on worker
 * `i % workers`, store the blocks it does not hold yet as one store (parent = ext of the deepest
 * block it holds, null = from the root); touch the chain in the worker's LRU; then evict
 * least-recently-used blocks over `capacityBlocks` with one `remove` event. A request touches
 * its whole prefix chain, leaf first, so parents are never older than children and eviction is
 * leaf-first: no eviction ever cascades, and the driver's view equals the index's.
 */
export function replayMooncake(
  index: PrefixIndexModel, requests: readonly MooncakeRequest[], opts: ReplayOptions,
): ReplayStats {
  const workers = Math.max(1, opts.workers | 0);
  const cap = Math.max(0, opts.capacityBlocks);
  // Per worker: held exts in LRU order (Set iteration = insertion order, oldest first).
  const lru: Set<bigint>[] = Array.from({ length: workers }, () => new Set<bigint>());
  const evicted: bigint[] = [];
  const stats: ReplayStats = {
    requests: 0, blocks: 0, bestMatchedBlocks: 0, targetMatchedBlocks: 0,
    storedBlocks: 0, evictedBlocks: 0, mismatches: 0,
  };
  for (let r = 0; r < requests.length; r++) {
    const { locals, blocks } = requests[r];
    const n = blocks.length;
    const w = r % workers;
    const rows = index.match(locals);
    let best = 0;
    for (const row of rows) {
      if (row.device > best) best = row.device;
      if (row.slot === w) stats.targetMatchedBlocks += row.device;
    }
    stats.bestMatchedBlocks += best;
    opts.onMatch?.(rows, r);
    const held = lru[w];
    let k = 0;
    while (k < n && held.has(blocks[k].ext)) k++;
    if (k < n) {
      const got = index.store(w, Tier.Device, k === 0 ? null : blocks[k - 1].ext, k === 0 ? blocks : blocks.slice(k));
      if (got !== n - k) stats.mismatches++;
      stats.storedBlocks += n - k;
    }
    for (let i = n - 1; i >= 0; i--) {
      const e = blocks[i].ext;
      held.delete(e);
      held.add(e);
    }
    if (held.size > cap) {
      let excess = held.size - cap;
      evicted.length = 0;
      for (const e of held) {
        if (excess-- <= 0) break;
        evicted.push(e);
      }
      for (const e of evicted) held.delete(e);
      if (index.remove(w, Tier.Device, evicted) !== evicted.length) stats.mismatches++;
      stats.evictedBlocks += evicted.length;
    }
    stats.requests++;
    stats.blocks += n;
  }
  return stats;
}
