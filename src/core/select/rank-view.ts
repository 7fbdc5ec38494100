/**
 * The dense form of one selection: a partition's schedulable ranks as columns in
 * `(worker_id, dp_rank)` order ({@link RankView}), and the per-partition scratch one request's
 * pass fills ({@link SelectScratch}): the prompt's tiered overlap and active-prefix depth per rank
 * row, the eligible positions, their costs. Selection then runs as loops over typed arrays: no
 * candidate object, no lookup by `worker:rank` string, no probe of ranks that cannot match.
 *
 * The pass's costs are in dense-cost.ts and its eligible positions in eligible-positions.ts;
 * both follow the object form in selector.ts (`defaultCosts`, `eligible`) step for step, which
 * stays the reference the tests compare with and the form custom policies receive.
 */
import { taintKey } from './selector.js';
import type { Partition, RankRef } from '../catalog/partition.js';
import type { ActiveLoads } from '../load/loads.js';
import type { KvIndex } from '../index/kv-index.js';

/** A partition's schedulable ranks as columns, by position in `(worker_id, dp_rank)` order. */
export class RankView {
  readonly n: number;
  /** The loads row of each position. */
  readonly rows: Int32Array;
  readonly workerIds: bigint[];
  readonly dpRanks: Int32Array;
  /** The distinct taint list of each position (an index into `groupTaints`). */
  readonly taintGroup: Int32Array;
  readonly groupTaints: (readonly string[])[] = [];
  /** Worker id -> its first position; its ranks follow contiguously. */
  readonly firstPos = new Map<bigint, number>();
  /** The position of each load row (-1: not schedulable here). */
  readonly posOfRow: Int32Array;

  constructor(readonly refs: readonly RankRef[], loads: ActiveLoads, readonly epoch: number) {
    const n = refs.length;
    this.n = n;
    this.rows = new Int32Array(n);
    this.workerIds = new Array<bigint>(n);
    this.dpRanks = new Int32Array(n);
    this.taintGroup = new Int32Array(n);
    this.posOfRow = new Int32Array(loads.prefill.length).fill(-1);
    const groups = new Map<string, number>();
    for (let p = 0; p < n; p++) {
      const { entry, dpRank, key } = refs[p];
      const row = loads.rowOfKey(key);
      if (row < 0) throw new Error(`internal: schedulable rank ${key} has no load row`);
      const w = entry.req.worker_id;
      this.rows[p] = row;
      this.posOfRow[row] = p;
      this.workerIds[p] = w;
      this.dpRanks[p] = dpRank;
      if (!this.firstPos.has(w)) this.firstPos.set(w, p);
      const taints = entry.req.taints;
      const k = taintKey(taints);
      let g = groups.get(k);
      if (g === undefined) {
        g = this.groupTaints.length;
        groups.set(k, g);
        this.groupTaints.push(taints);
      }
      this.taintGroup[p] = g;
    }
  }

  /** The positions `[first, end)` of a worker's ranks (empty when it has none here). */
  span(workerId: bigint): [number, number] {
    const first = this.firstPos.get(workerId);
    if (first === undefined) return [0, 0];
    let end = first + 1;
    while (end < this.n && this.workerIds[end] === workerId) end++;
    return [first, end];
  }
}

/** A slot -> load row map of one index, valid while neither the slots nor the ranks change. */
interface SlotRows { version: number; epoch: number; map: Int32Array }

/**
 * One request's pass over a partition: per load row (cleared after every pass) the overlap and
 * depth, and per eligible position the cost. One per partition: a pass runs synchronously.
 */
export class SelectScratch {
  /** Rows the pass wrote overlap for, and the per-row overlap (device, host extension, disk + external extension, cached tokens). */
  touched: Int32Array = new Int32Array(16);
  nTouched = 0;
  dev: Int32Array = new Int32Array(16);
  host: Int32Array = new Int32Array(16);
  disk: Int32Array = new Int32Array(16);
  cached: Float64Array = new Float64Array(16);
  /** Pass stamp per row (a row already written by this pass). */
  stamp: Uint32Array = new Uint32Array(16);
  pass = 0;
  /** Rows that hold the prompt's first tracking hash, and their active-prefix depth. */
  depthRows: Int32Array = new Int32Array(16);
  nDepth = 0;
  depth: Int32Array = new Int32Array(16);
  /** Eligible positions (when `all` is false) and their costs. */
  kept: Int32Array = new Int32Array(16);
  all = true;
  nKept = 0;
  costs: Float64Array = new Float64Array(16);
  /** Per taint group: a multiplier, and its pass stamp. */
  groupMult: Float64Array = new Float64Array(16);
  groupStamp: Uint32Array = new Uint32Array(16);
  primary: SlotRows = { version: -1, epoch: -1, map: new Int32Array(0) };
  side: SlotRows = { version: -1, epoch: -1, map: new Int32Array(0) };
  view: RankView | null = null;
  /** A pass is running on this scratch. */
  active = false;

  /** Sizes the per-row arrays for `rows` rows and the per-position ones for `n` positions. */
  fit(rows: number, n: number, groups: number): void {
    if (rows > this.dev.length) {
      let cap = this.dev.length;
      while (cap < rows) cap *= 2;
      this.touched = new Int32Array(cap);
      this.dev = new Int32Array(cap);
      this.host = new Int32Array(cap);
      this.disk = new Int32Array(cap);
      this.cached = new Float64Array(cap);
      this.stamp = new Uint32Array(cap);
      this.depthRows = new Int32Array(cap);
      this.depth = new Int32Array(cap);
    }
    if (n > this.kept.length) {
      let cap = this.kept.length;
      while (cap < n) cap *= 2;
      this.kept = new Int32Array(cap);
      this.costs = new Float64Array(cap);
    }
    if (groups > this.groupMult.length) {
      let cap = this.groupMult.length;
      while (cap < groups) cap *= 2;
      this.groupMult = new Float64Array(cap);
      this.groupStamp = new Uint32Array(cap);
    }
  }

  /** Starts a pass: a new stamp (rows written by earlier passes were cleared). */
  begin(): void {
    this.pass = (this.pass + 1) >>> 0;
    if (this.pass === 0) { this.stamp.fill(0); this.groupStamp.fill(0); this.pass = 1; }
    this.nTouched = 0;
    this.nDepth = 0;
  }

  /** Sets a row's overlap (first write of the pass lists it as touched). */
  put(row: number, dev: number, host: number, disk: number, cached: number): void {
    if (this.stamp[row] !== this.pass) {
      this.stamp[row] = this.pass;
      this.touched[this.nTouched++] = row;
    }
    this.dev[row] = dev;
    this.host[row] = host;
    this.disk[row] = disk;
    this.cached[row] = cached;
  }

  /** Whether the pass has written a row's overlap. */
  has(row: number): boolean { return this.stamp[row] === this.pass; }

  /** Zeroes what the pass wrote, so every untouched row reads 0 in the next one. */
  clear(): void {
    const t = this.touched;
    if (this.nTouched * 8 > this.dev.length) {
      // a prompt matched on many rows (a shared prefix across a big fleet): four memsets beat the
      // scattered stores (W=8,000, ~2,000 matched rows: see the commit that added this)
      this.dev.fill(0); this.host.fill(0); this.disk.fill(0); this.cached.fill(0);
    } else {
      for (let i = 0; i < this.nTouched; i++) {
        const r = t[i];
        this.dev[r] = 0; this.host[r] = 0; this.disk[r] = 0; this.cached[r] = 0;
      }
    }
    this.nTouched = 0;
    for (let i = 0; i < this.nDepth; i++) this.depth[this.depthRows[i]] = 0;
    this.nDepth = 0;
  }

  /** The position of the i-th eligible rank. */
  posAt(i: number): number { return this.all ? i : this.kept[i]; }
}

/** The slot -> load row map of `index` (-1: no schedulable rank), rebuilt when slots or ranks change. */
export function slotRows(cache: SlotRows, index: KvIndex, loads: ActiveLoads): Int32Array {
  const slots = index.slots;
  if (cache.version === slots.version && cache.epoch === loads.epoch) return cache.map;
  const map = new Int32Array(slots.size).fill(-1);
  for (const [s] of slots.entries()) {
    const wr = slots.get(s);
    if (wr) map[s] = loads.rowOfKey(wr.key);
  }
  cache.version = slots.version;
  cache.epoch = loads.epoch;
  cache.map = map;
  return map;
}

/** Rust's `f64::round` for x >= 0 (half away from zero), as the wasm credit computes it. */
function roundHalfUp(x: number): number {
  const c = Math.ceil(x);
  return c - 0.5 > x ? c - 1 : c;
}

/** Credit weights of one request. */
export interface Weights { overlapScoreCredit: number; hostCacheHitWeight: number; diskCacheHitWeight: number }

/**
 * Writes the prompt's tiered overlap per load row into `S` (the index's match by slot, mapped to
 * rows), then merges the predicted side index's device matches (select/overlap.ts, `mergePredicted`:
 * the larger device match wins and the cached tokens are recomputed from the merged tiers).
 */
export function matchInto(S: SelectScratch, part: Partition, locals: BigUint64Array, isl: number, w: Weights): void {
  const loads = part.loads;
  const index = part.index;
  const rows = index.matchRows(locals, isl, w);
  if (rows > 0) {
    const map = slotRows(S.primary, index, loads);
    const ix = index.index;
    const s = ix.rowSlots(), d = ix.rowDevice(), h = ix.rowHost(), k = ix.rowDisk(), x = ix.rowExternal(), ca = ix.rowCachedTokens();
    for (let i = 0; i < rows; i++) {
      const slot = s[i];
      const r = slot < map.length ? map[slot] : -1;
      if (r >= 0) S.put(r, d[i], h[i], k[i] + x[i], ca[i]);
    }
  }
  const side = part.predicted?.index;
  if (!side) return;
  const n = side.matchRows(locals, isl, w);
  if (n === 0) return;
  const map = slotRows(S.side, side, loads);
  const ix = side.index;
  const s = ix.rowSlots(), d = ix.rowDevice();
  const bs = part.blockSize;
  for (let i = 0; i < n; i++) {
    const slot = s[i];
    const r = slot < map.length ? map[slot] : -1;
    if (r < 0) continue;
    const device = d[i];
    if (!S.has(r)) {
      // a rank only the side index matched: its device match, no lower tiers
      const tiers = w.hostCacheHitWeight * 0 + w.diskCacheHitWeight * (0 + 0);
      S.put(r, device, 0, 0, Math.max(0, roundHalfUp((device + tiers) * bs)));
    } else if (device > S.dev[r]) {
      const host = S.host[r], disk = S.disk[r];
      const tiers = w.hostCacheHitWeight * host + w.diskCacheHitWeight * disk;
      S.put(r, device, host, disk, Math.max(0, roundHalfUp((device + tiers) * bs)));
    }
  }
}
