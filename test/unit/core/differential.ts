/**
 * Differential harness for PrefixIndexModel implementations (helper module, not a test).
 *
 * `runDifferential(makeA, makeB, ops)` applies every op to both implementations and asserts
 * identical answers, identical treeSize for every slot/tier after each batch, identical canonical
 * dumps at checkpoints and at the end, and a dump round trip in both directions.
 * `TeeIndex` is a PrefixIndexModel that forwards to two implementations and asserts each answer
 * (for drivers like the Mooncake replay).
 */
import assert from 'node:assert/strict';
import { TIERS, canonicalHoldings } from '../../../src/core/index/index-types.js';
import type { BlockRef, Holding, MatchRow, PrefixIndexModel, Tier } from '../../../src/core/index/index-types.js';
import { applyOp } from '../../reference/workload.js';
import type { Op, OpResult } from '../../reference/workload.js';

/** Options of {@link runDifferential}. */
export interface DiffOptions {
  /** Compare treeSize of every slot and tier every this many ops (default 64). */
  sizeEvery?: number;
  /** Compare canonical dumps every this many ops (default 1000). */
  dumpEvery?: number;
  /** Label prefixed to assertion messages. */
  label?: string;
}

/** Counters returned by {@link runDifferential} (so tests can check the workload did something). */
export interface DiffStats {
  ops: number;
  storeStatus: Map<number, number>;
  matchRows: number;
  holdings: number;
}

const bigintSafe = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? `${v}n` : v);

/** JSON-ish rendering of an op (BigInts as `123n`), truncated for assertion messages. */
export function fmt(x: unknown): string {
  const s = JSON.stringify(x, bigintSafe);
  return s === undefined ? String(x) : s.length > 600 ? `${s.slice(0, 600)}...` : s;
}

/** Plain copies of match rows, so implementations returning class instances still compare. */
export function plainRows(rows: readonly MatchRow[]): MatchRow[] {
  return rows.map((r) => ({ slot: r.slot, device: r.device, hostExt: r.hostExt, diskExt: r.diskExt, externalExt: r.externalExt }));
}

function normalize(r: OpResult): OpResult {
  return Array.isArray(r) ? plainRows(r) : r;
}

function sameRows(x: readonly MatchRow[], y: readonly MatchRow[]): boolean {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i];
    const q = y[i];
    if (p.slot !== q.slot || p.device !== q.device || p.hostExt !== q.hostExt || p.diskExt !== q.diskExt || p.externalExt !== q.externalExt) return false;
  }
  return true;
}

/** Cheap equality of two op answers (numbers, undefined or match rows). */
export function sameResult(x: OpResult, y: OpResult): boolean {
  if (Array.isArray(x) || Array.isArray(y)) return Array.isArray(x) && Array.isArray(y) && sameRows(x, y);
  return x === y;
}

/** Assert equal answers; the message is built only on failure, with deepStrictEqual's diff. */
function expectSame(got: OpResult, want: OpResult, msg: () => string): void {
  if (!sameResult(got, want)) assert.deepStrictEqual(normalize(got), normalize(want), msg());
}

function maxSlot(ops: readonly Op[]): number {
  let m = -1;
  for (const o of ops) if (o.op !== 'match' && o.slot > m) m = o.slot;
  return m;
}

function sizes(ix: PrefixIndexModel, slots: number): number[] {
  const out: number[] = [];
  for (let s = 0; s < slots; s++) for (const t of TIERS) out.push(ix.treeSize(s, t));
  return out;
}

function compareSizes(a: PrefixIndexModel, b: PrefixIndexModel, slots: number, where: string): void {
  const sa = sizes(a, slots);
  const sb = sizes(b, slots);
  for (let i = 0; i < sa.length; i++) {
    if (sa[i] !== sb[i]) {
      assert.fail(`${where}: treeSize(slot ${Math.floor(i / TIERS.length)}, tier ${TIERS[i % TIERS.length]}) A=${sa[i]} B=${sb[i]}`);
    }
  }
}

function compareDumps(a: PrefixIndexModel, b: PrefixIndexModel, where: string): number {
  const da = canonicalHoldings(a.dumpHoldings());
  const db = canonicalHoldings(b.dumpHoldings());
  if (da.length !== db.length || da.some((x, i) => x !== db[i])) {
    const sa = new Set(da);
    const sb = new Set(db);
    const onlyA = da.filter((x) => !sb.has(x)).slice(0, 5);
    const onlyB = db.filter((x) => !sa.has(x)).slice(0, 5);
    assert.fail(`${where}: dumps differ (A ${da.length}, B ${db.length}); only in A: ${onlyA.join(', ')}; only in B: ${onlyB.join(', ')}`);
  }
  return da.length;
}

/** Free an implementation's resources when it has a `destroy()` / `dispose()` (the wasm index). */
export function release(ix: PrefixIndexModel): void {
  const r = ix as { destroy?: () => void; dispose?: () => void };
  if (typeof r.destroy === 'function') r.destroy();
  else if (typeof r.dispose === 'function') r.dispose();
}

/** Replay a dump into a fresh index; every single-block store must apply (return 1). */
export function loadDump(into: PrefixIndexModel, holdings: readonly Holding[], where = 'loadDump'): PrefixIndexModel {
  for (let i = 0; i < holdings.length; i++) {
    const h = holdings[i];
    const got = into.store(h.slot, h.tier, h.parentExt, [{ ext: h.ext, local: h.local }]);
    if (got !== 1) assert.fail(`${where}: replaying holding #${i} ${fmt(h)} returned ${got}`);
  }
  return into;
}

/**
 * Apply `ops` to fresh `makeA()` and `makeB()` and assert they agree on everything (see module
 * doc). Throws an AssertionError naming the first op that differs.
 */
export function runDifferential(
  makeA: () => PrefixIndexModel, makeB: () => PrefixIndexModel, ops: readonly Op[], opts: DiffOptions = {},
): DiffStats {
  const label = opts.label ? `${opts.label}: ` : '';
  const sizeEvery = opts.sizeEvery ?? 64;
  const dumpEvery = opts.dumpEvery ?? 1000;
  const slots = maxSlot(ops) + 1;
  const made: PrefixIndexModel[] = [];
  const make = (f: () => PrefixIndexModel): PrefixIndexModel => { const ix = f(); made.push(ix); return ix; };
  try {
    const a = make(makeA);
    const b = make(makeB);
    const stats: DiffStats = { ops: ops.length, storeStatus: new Map(), matchRows: 0, holdings: 0 };
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      const ra = applyOp(a, o);
      const rb = applyOp(b, o);
      expectSame(rb, ra, () => `${label}op #${i} ${fmt(o)}: A=${fmt(ra)} B=${fmt(rb)} (actual = B, expected = A)`);
      if (o.op === 'store') stats.storeStatus.set(ra as number, (stats.storeStatus.get(ra as number) ?? 0) + 1);
      if (o.op === 'match') stats.matchRows += (ra as MatchRow[]).length;
      if ((i + 1) % sizeEvery === 0) compareSizes(a, b, slots, `${label}after op #${i}`);
      if ((i + 1) % dumpEvery === 0) compareDumps(a, b, `${label}after op #${i}`);
    }
    compareSizes(a, b, slots, `${label}at the end`);
    stats.holdings = compareDumps(a, b, `${label}at the end`);
    // Dump round trip, both directions: a fresh index loaded from the other's dump matches alike.
    const bFromA = loadDump(make(makeB), a.dumpHoldings(), `${label}A's dump into fresh B`);
    const aFromB = loadDump(make(makeA), b.dumpHoldings(), `${label}B's dump into fresh A`);
    compareDumps(a, bFromA, `${label}A vs B loaded from A's dump`);
    compareDumps(b, aFromB, `${label}B vs A loaded from B's dump`);
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op !== 'match') continue;
      const want = a.match(o.locals);
      expectSame(bFromA.match(o.locals), want, () => `${label}round trip A->B, match op #${i} ${fmt(o.locals)}`);
      expectSame(aFromB.match(o.locals), want, () => `${label}round trip B->A, match op #${i} ${fmt(o.locals)}`);
    }
    return stats;
  } finally {
    for (const ix of made) release(ix);
  }
}

/** A PrefixIndexModel that forwards every call to `a` and `b` and asserts equal answers. */
export class TeeIndex implements PrefixIndexModel {
  calls = 0;
  constructor(readonly a: PrefixIndexModel, readonly b: PrefixIndexModel, readonly label = 'tee') {}

  private same<T extends OpResult>(ra: T, rb: T, what: () => string): T {
    this.calls++;
    expectSame(rb, ra, () => `${this.label}: call #${this.calls} ${what()} (actual = b, expected = a)`);
    return ra;
  }
  store(slot: number, tier: Tier, parent: bigint | null, blocks: readonly BlockRef[]): number {
    return this.same(this.a.store(slot, tier, parent, blocks), this.b.store(slot, tier, parent, blocks),
      () => `store(${slot}, ${tier}, ${parent}, ${fmt(blocks)})`);
  }
  remove(slot: number, tier: Tier, exts: readonly bigint[]): number {
    return this.same(this.a.remove(slot, tier, exts), this.b.remove(slot, tier, exts), () => `remove(${slot}, ${tier}, ${fmt(exts)})`);
  }
  clear(slot: number, tier: Tier | -1): void {
    this.a.clear(slot, tier);
    this.b.clear(slot, tier);
  }
  removeSlot(slot: number): void {
    this.a.removeSlot(slot);
    this.b.removeSlot(slot);
  }
  match(locals: readonly bigint[]): MatchRow[] {
    return this.same(this.a.match(locals), this.b.match(locals), () => `match(${fmt(locals)})`);
  }
  treeSize(slot: number, tier: Tier): number {
    return this.same(this.a.treeSize(slot, tier), this.b.treeSize(slot, tier), () => `treeSize(${slot}, ${tier})`);
  }
  dumpHoldings(): Holding[] {
    const ha = this.a.dumpHoldings();
    this.calls++;
    assert.deepStrictEqual(canonicalHoldings(this.b.dumpHoldings()), canonicalHoldings(ha), `${this.label}: dumpHoldings()`);
    return ha;
  }
}
