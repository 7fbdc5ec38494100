/**
 * The wasm prefix index of one partition (contract: index-types.ts). Two surfaces:
 * - hot: callers fill scratch through the `Wasm` writers (`writeLocals`, `writeExtWords`, ...)
 *   and call `storeN`, `removeN`, `matchN`; results are read from `rowSlots()` etc. No BigInt
 *   per hash.
 * - cold (`PrefixIndexModel`): BigInt arrays in and out, for tests, dumps and tools.
 */
import { getWasm, type Wasm, type WasmExports } from './wasm.js';
import type { BlockRef, Holding, MatchRow, PrefixIndexModel, Tier } from './index-types.js';

export class WasmPrefixIndex implements PrefixIndexModel {
  readonly wasm: Wasm;
  readonly handle: number;
  private slotCap = 0;
  private readonly x: WasmExports;

  constructor(wasm: Wasm = getWasm()) {
    this.wasm = wasm;
    this.x = wasm.exports;
    this.handle = this.x.indexNew();
    if (this.handle < 0) throw new Error('no free wasm index handle');
    this.ensureSlots(8);
  }

  /** Make slots [0, n) usable and size the match output regions for them (cold). */
  ensureSlots(n: number): void {
    if (n <= this.slotCap) return;
    const cap = this.x.indexSlots(this.handle, n);
    this.wasm.reserveRows(cap);
    this.slotCap = cap;
  }

  /** Free the wasm memory of this index. */
  destroy(): void { this.x.indexFree(this.handle); }

  // ---- hot surface ----
  /** Store n blocks: engine hashes written with `writeExts`/`writeExtWords`, local hashes with `writeLocals`. */
  storeN(slot: number, tier: Tier, hasParent: boolean, n: number): number {
    return this.x.storeBlocks(this.handle, slot, tier, hasParent ? 1 : 0, n);
  }
  /**
   * Stored with token ids, one wasm call per engine event: hashes the complete blocks of the
   * `nTokens` tokens written with `writeTokens`, with the seed set by `setSeed[Words]` (plus mm
   * data from `writeMm` when `withMm`), then stores min(nExt, blocks) of them under the nExt
   * engine hashes written with `writeExt[Word]s`. Returns applied blocks or a StoreStatus. Pass
   * at most nExt * blockSize (+1 with EAGLE) tokens: the hash output region is sized for nExt.
   */
  storeTokensN(slot: number, tier: Tier, hasParent: boolean, nExt: number, nTokens: number, blockSize: number,
    eagle: boolean, withMm: boolean): number {
    this.wasm.reserveLocals(nExt);
    return this.x.storeTokens(this.handle, slot, tier, hasParent ? 1 : 0, nExt, nTokens, blockSize, eagle ? 1 : 0, withMm ? 1 : 0);
  }
  /** Remove the n engine hashes written with `writeExt[Word]s`; returns how many the slot held. */
  removeN(slot: number, tier: Tier, n: number): number { return this.x.removeBlocks(this.handle, slot, tier, n); }
  /** Match the n local hashes written with `writeLocals`; returns the row count. */
  matchN(n: number): number { return this.x.matchQuery(this.handle, n); }
  /** Ext hashes `slot` holds along the device path of the n written local hashes, into `wasm.exts()`; returns the depth. */
  chainExtsN(n: number, slot: number): number {
    this.wasm.reserveExts(n);
    return this.x.chainExts(this.handle, n, slot);
  }
  rowSlots(): Uint32Array { return this.wasm.rowSlots(); }
  rowDevice(): Uint32Array { return this.wasm.rowDevice(); }
  rowHost(): Uint32Array { return this.wasm.rowHost(); }
  rowDisk(): Uint32Array { return this.wasm.rowDisk(); }
  rowExternal(): Uint32Array { return this.wasm.rowExternal(); }
  /** Cache credit of the first `rows` rows: see assembly/credit.ts for the formulas. */
  credit(rows: number, blockSize: number, isl: number, credit: number, hostW: number, diskW: number): void {
    this.x.creditRows(rows, blockSize, isl, credit, hostW, diskW);
  }
  rowEffectiveBlocks(): Float64Array { return this.wasm.rowEffectiveBlocks(); }
  rowCreditBlocks(): Float64Array { return this.wasm.rowCreditBlocks(); }
  rowCachedTokens(): Uint32Array { return this.wasm.rowCachedTokens(); }
  rowEffectivePrefill(): Uint32Array { return this.wasm.rowEffectivePrefill(); }
  /** Live tree nodes / edges of a tier. */
  recordCount(tier: Tier): number { return this.x.recordCount(this.handle, tier); }
  holdingCount(tier: Tier): number { return this.x.holdingCount(this.handle, tier); }
  /** Device holdings whose worker does not hold the block's parent (see assembly/radix.ts). */
  orphanCount(): number { return this.x.orphanCount(this.handle); }

  // ---- cold surface (PrefixIndexModel) ----
  store(slot: number, tier: Tier, parent: bigint | null, blocks: readonly BlockRef[]): number {
    this.ensureSlots(slot + 1);
    this.wasm.writeLocals(blocks.map((b) => b.local));
    this.wasm.writeExts(blocks.map((b) => b.ext));
    this.wasm.setParent(parent ?? 0n);
    return this.storeN(slot, tier, parent !== null, blocks.length);
  }

  remove(slot: number, tier: Tier, exts: readonly bigint[]): number {
    this.ensureSlots(slot + 1);
    this.wasm.writeExts(exts);
    return this.removeN(slot, tier, exts.length);
  }

  clear(slot: number, tier: Tier | -1): void {
    this.ensureSlots(slot + 1);
    this.x.clearSlot(this.handle, slot, tier);
  }

  removeSlot(slot: number): void { this.clear(slot, -1); }

  match(locals: readonly bigint[]): MatchRow[] {
    this.wasm.writeLocals(locals);
    const n = this.matchN(locals.length);
    const s = this.rowSlots(), d = this.rowDevice(), h = this.rowHost(), k = this.rowDisk(), x = this.rowExternal();
    const rows: MatchRow[] = [];
    for (let i = 0; i < n; i++) rows.push({ slot: s[i], device: d[i], hostExt: h[i], diskExt: k[i], externalExt: x[i] });
    return rows.sort((p, q) => p.slot - q.slot);
  }

  treeSize(slot: number, tier: Tier): number { return this.x.treeSize(this.handle, slot, tier); }

  dumpHoldings(): Holding[] {
    const out: Holding[] = [];
    for (const tier of [0, 1, 2, 3] as Tier[]) {
      const need = this.holdingCount(tier);
      if (need === 0) continue;
      this.wasm.reserveDump(need);
      const rows = this.x.dumpRows(this.handle, tier);
      if (rows < 0) throw new Error(`dump of tier ${tier} failed (${rows})`);
      const w = this.wasm.dumpPairs(), q = this.wasm.dumpHashes();
      for (let i = 0; i < rows; i++) {
        out.push({ slot: w[2 * i], tier, ext: q[3 * i], parentExt: w[2 * i + 1] ? q[3 * i + 1] : null, local: q[3 * i + 2] });
      }
    }
    return out;
  }
}
