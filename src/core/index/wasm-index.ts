/**
 * The wasm prefix index of one partition (contract: index-types.ts). Two surfaces:
 * - hot: callers write hashes into `hashA()` / `hashB()` views themselves and call `storeN`,
 *   `removeN`, `matchN`; results are read from `rowSlots()` etc. No BigInt per hash.
 * - cold (`PrefixIndexModel`): BigInt arrays in and out, for tests, dumps and tools.
 */
import { getWasm, type Wasm } from './wasm.js';
import type { BlockRef, Holding, MatchRow, PrefixIndexModel, Tier } from './index-types.js';

type Fn = (...a: number[]) => number;

export class WasmPrefixIndex implements PrefixIndexModel {
  readonly wasm: Wasm;
  readonly handle: number;
  private slotCap = 0;
  private readonly f: Record<string, Fn>;

  constructor(wasm: Wasm = getWasm()) {
    this.wasm = wasm;
    const names = ['indexNew', 'indexFree', 'indexSlots', 'storeBlocks', 'storeTokens', 'removeBlocks', 'clearSlot',
      'matchQuery', 'creditRows', 'treeSize', 'holdingCount', 'recordCount', 'dumpRows', 'chainExts'];
    this.f = Object.fromEntries(names.map((n) => [n, wasm.fn(n)]));
    this.handle = this.f.indexNew();
    if (this.handle < 0) throw new Error('no free wasm index handle');
    this.ensureSlots(8);
  }

  /** Make slots [0, n) usable and size the match output regions for them (cold). */
  ensureSlots(n: number): void {
    if (n <= this.slotCap) return;
    const cap = this.f.indexSlots(this.handle, n);
    const L = this.wasm.layout;
    for (const r of [L.R_OUT_SLOT, L.R_OUT_DEV, L.R_OUT_HOST, L.R_OUT_DISK, L.R_OUT_EXTN, L.R_OUT_U32A, L.R_OUT_U32B]) this.wasm.reserve(r, cap * 4);
    for (const r of [L.R_OUT_F64A, L.R_OUT_F64B]) this.wasm.reserve(r, cap * 8);
    this.slotCap = cap;
  }

  /** Free the wasm memory of this index. */
  destroy(): void { this.f.indexFree(this.handle); }

  // ---- hot surface ----
  /** Make the hash regions hold n values. */
  reserveHashes(n: number): void {
    const L = this.wasm.layout;
    this.wasm.reserve(L.R_HASH_A, n * 8);
    this.wasm.reserve(L.R_HASH_B, n * 8);
  }
  hashA(): BigUint64Array { return this.wasm.u64(this.wasm.layout.R_HASH_A); }
  hashB(): BigUint64Array { return this.wasm.u64(this.wasm.layout.R_HASH_B); }
  /** u32 word view of R_HASH_B (value i = words 2i (lo), 2i+1 (hi)). */
  hashBWords(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_HASH_B); }
  hashAWords(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_HASH_A); }
  /** Store n blocks already in the hash regions; parent given as lo/hi words or absent. */
  storeN(slot: number, tier: Tier, hasParent: boolean, n: number): number {
    return this.f.storeBlocks(this.handle, slot, tier, hasParent ? 1 : 0, n);
  }
  /** Set the parent engine hash from lo/hi words (no BigInt). */
  setParentWords(lo: number, hi: number): void {
    const w = this.wasm.u32(this.wasm.layout.R_PARAMS);
    const i = this.wasm.layout.P_PARENT * 2;
    w[i] = lo; w[i + 1] = hi;
  }
  /**
   * Stored with token ids, one wasm call per engine event: hashes the complete blocks of the
   * `nTokens` tokens in R_TOKENS with the seed in P_SEED (plus mm data when `withMm`) into
   * R_HASH_A, then stores min(nExt, blocks) of them under the engine hashes in R_HASH_B. Returns
   * applied blocks or a StoreStatus. The export trusts region sizes: the caller reserves
   * R_TOKENS (nTokens * 4), R_HASH_A / R_HASH_B (nExt * 8) and passes at most
   * nExt * blockSize (+1 with EAGLE) tokens, so the hash output never outgrows R_HASH_A.
   */
  storeTokensN(slot: number, tier: Tier, hasParent: boolean, nExt: number, nTokens: number, blockSize: number,
    eagle: boolean, withMm: boolean): number {
    return this.f.storeTokens(this.handle, slot, tier, hasParent ? 1 : 0, nExt, nTokens, blockSize, eagle ? 1 : 0, withMm ? 1 : 0);
  }
  removeN(slot: number, tier: Tier, n: number): number { return this.f.removeBlocks(this.handle, slot, tier, n); }
  /** Match the n local hashes in R_HASH_A; returns the row count. */
  matchN(n: number): number { return this.f.matchQuery(this.handle, n); }
  /** Ext hashes `slot` holds along the device path of the n hashes in hashA(), into hashB(); returns the depth. */
  chainExtsN(n: number, slot: number): number { return this.f.chainExts(this.handle, n, slot); }
  rowSlots(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_SLOT); }
  rowDevice(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_DEV); }
  rowHost(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_HOST); }
  rowDisk(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_DISK); }
  rowExternal(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_EXTN); }
  /** Cache credit of the first `rows` rows: see assembly/credit.ts for the formulas. */
  credit(rows: number, blockSize: number, isl: number, credit: number, hostW: number, diskW: number): void {
    this.f.creditRows(rows, blockSize, isl, credit, hostW, diskW);
  }
  rowEffectiveBlocks(): Float64Array { return this.wasm.f64(this.wasm.layout.R_OUT_F64A); }
  rowCreditBlocks(): Float64Array { return this.wasm.f64(this.wasm.layout.R_OUT_F64B); }
  rowCachedTokens(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_U32A); }
  rowEffectivePrefill(): Uint32Array { return this.wasm.u32(this.wasm.layout.R_OUT_U32B); }
  /** Live tree nodes / edges of a tier. */
  recordCount(tier: Tier): number { return this.f.recordCount(this.handle, tier); }
  holdingCount(tier: Tier): number { return this.f.holdingCount(this.handle, tier); }

  // ---- cold surface (PrefixIndexModel) ----
  private writeBlocks(parent: bigint | null, blocks: readonly BlockRef[]): void {
    this.reserveHashes(blocks.length);
    const a = this.hashA(), b = this.hashB();
    for (let i = 0; i < blocks.length; i++) { a[i] = blocks[i].local; b[i] = blocks[i].ext; }
    this.wasm.setParam(this.wasm.layout.P_PARENT, parent ?? 0n);
  }

  store(slot: number, tier: Tier, parent: bigint | null, blocks: readonly BlockRef[]): number {
    this.ensureSlots(slot + 1);
    this.writeBlocks(parent, blocks);
    return this.storeN(slot, tier, parent !== null, blocks.length);
  }

  remove(slot: number, tier: Tier, exts: readonly bigint[]): number {
    this.ensureSlots(slot + 1);
    this.reserveHashes(exts.length);
    const b = this.hashB();
    for (let i = 0; i < exts.length; i++) b[i] = exts[i];
    return this.removeN(slot, tier, exts.length);
  }

  clear(slot: number, tier: Tier | -1): void {
    this.ensureSlots(slot + 1);
    this.f.clearSlot(this.handle, slot, tier);
  }

  removeSlot(slot: number): void { this.clear(slot, -1); }

  match(locals: readonly bigint[]): MatchRow[] {
    this.reserveHashes(locals.length);
    const a = this.hashA();
    for (let i = 0; i < locals.length; i++) a[i] = locals[i];
    const n = this.matchN(locals.length);
    const s = this.rowSlots(), d = this.rowDevice(), h = this.rowHost(), k = this.rowDisk(), x = this.rowExternal();
    const rows: MatchRow[] = [];
    for (let i = 0; i < n; i++) rows.push({ slot: s[i], device: d[i], hostExt: h[i], diskExt: k[i], externalExt: x[i] });
    return rows.sort((p, q) => p.slot - q.slot);
  }

  treeSize(slot: number, tier: Tier): number { return this.f.treeSize(this.handle, slot, tier); }

  dumpHoldings(): Holding[] {
    const out: Holding[] = [];
    const L = this.wasm.layout;
    for (const tier of [0, 1, 2, 3] as Tier[]) {
      const need = this.holdingCount(tier);
      if (need === 0) continue;
      this.wasm.reserve(L.R_OUT_U32A, need * 8);
      this.wasm.reserve(L.R_DUMP_U64, need * 24);
      const rows = this.f.dumpRows(this.handle, tier);
      if (rows < 0) throw new Error(`dump of tier ${tier} failed (${rows})`);
      const w = this.wasm.u32(L.R_OUT_U32A), q = this.wasm.u64(L.R_DUMP_U64);
      for (let i = 0; i < rows; i++) {
        out.push({ slot: w[2 * i], tier, ext: q[3 * i], parentExt: w[2 * i + 1] ? q[3 * i + 1] : null, local: q[3 * i + 2] });
      }
    }
    return out;
  }
}
