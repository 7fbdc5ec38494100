/**
 * Mooncake trace replay (kvcache-ai/Mooncake FAST'25 traces, one JSON request a line:
 * `{"timestamp", "input_length", "output_length", "hash_ids"}`, 512 tokens per hash_id).
 *
 * Each hash_id expands into `512 / blockSize` blocks; block `sub` of id `id` gets the local hash
 * {@link hashIdToU64}`(id, sub)` and a distinct engine ext hash {@link hashIdToExt}`(id, sub)`
 * (the simulator's block identities, src/sim/block-ids.ts, differently salted, so local != ext). In the trace equal ids always sit at equal positions
 * under equal parents, so a per-(id, sub) ext is a consistent prefix identity.
 *
 * {@link replayMooncake} drives any {@link PrefixIndexModel} with the trace: match, round-robin
 * store of the missing suffix, per-worker LRU eviction. Used by tests and the benchmark;
 * deterministic and allocation-light. No `node:` imports.
 */
import { Tier } from '../../src/core/index/index-types.js';
import type { BlockRef, MatchRow, PrefixIndexModel } from '../../src/core/index/index-types.js';
import { TRACE_BLOCK_TOKENS, hashIdsOf, parseTrace } from '../../src/sim/trace.js';
import { extHash, localHash } from '../../src/sim/block-ids.js';

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

/** Block key of sub-block `sub` (< 512) of trace hash_id `id`: a bijection of (id, sub). */
const subKey = (id: number, sub: number): number => id * TRACE_BLOCK_TOKENS + sub;

/** Stable local hash of sub-block `sub` of trace hash_id `id` (the simulator's local mixing). */
export function hashIdToU64(id: number, sub: number): bigint {
  return localHash(subKey(id, sub));
}

/** Stable engine ext hash of sub-block `sub` of `id` (the simulator's ext mixing, differently salted). */
export function hashIdToExt(id: number, sub: number): bigint {
  return extHash(subKey(id, sub));
}

function subBlocks(blockSize: number): number {
  const per = TRACE_BLOCK_TOKENS / blockSize;
  if (!Number.isInteger(per) || per < 1) {
    throw new RangeError(`block size ${blockSize} must divide ${TRACE_BLOCK_TOKENS}`);
  }
  return per;
}

/**
 * Parse a whole JSONL trace with the project's trace reader (src/sim/trace.ts: validated, sorted
 * by timestamp, blank lines ignored) and expand each request's chain; `limit` keeps only the
 * first requests; `blockSize` (default 512) must divide 512.
 */
export function parseMooncake(text: string, opts: { blockSize?: number; limit?: number } = {}): MooncakeRequest[] {
  const per = subBlocks(opts.blockSize ?? TRACE_BLOCK_TOKENS);
  const trace = parseTrace(text, { limit: opts.limit });
  const out: MooncakeRequest[] = [];
  for (let i = 0; i < trace.length; i++) {
    const hashIds = Array.from(hashIdsOf(trace, i));
    const locals: bigint[] = [];
    const blocks: BlockRef[] = [];
    for (const id of hashIds) {
      for (let sub = 0; sub < per; sub++) {
        const local = hashIdToU64(id, sub);
        locals.push(local);
        blocks.push({ ext: hashIdToExt(id, sub), local });
      }
    }
    out.push({
      timestamp: trace.timestamps[i], inputLength: trace.inputLength[i], outputLength: trace.outputLength[i],
      hashIds, locals, blocks,
    });
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
