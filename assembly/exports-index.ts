// Prefix-index exports: thin wrappers that read their inputs from scratch (layout.ts) and call
// radix.ts / tiers.ts / match.ts / credit.ts / dump.ts. Event inputs: engine hashes in R_HASH_B,
// local hashes in R_HASH_A, parent engine hash in P_PARENT.
import {
  NONE, FREED, R_HASH_A, R_HASH_B, R_TOKENS, R_MM_COUNTS, R_MM_HASHES, R_TMP, R_OUT_SLOT, R_OUT_DEV,
  R_OUT_HOST, R_OUT_DISK, R_OUT_EXTN, R_OUT_F64A, R_OUT_F64B, R_OUT_U32A, R_OUT_U32B, R_DUMP_U64,
  P_PARENT, P_SEED, TIER_DEVICE, TIER_COUNT, ST_INVALID_SEQUENCE, ST_BAD_SLOT, ST_BAD_INDEX, N_HOLD,
} from './layout';
import { regionPtr, regionCap, reserve, paramU64, scratchInit } from './scratch';
import { Index, indexOf, indexCreate, indexRelease, ensureSlots, holdings, pool, slotMapIfAny } from './state';
import { rec, vecFree } from './pool';
import { setFree, freeKids } from './holders';
import { tabCount } from './hashtab';
import { deviceStore, deviceRemove, deviceClear } from './radix';
import { tierStore, tierRemove, tierClear } from './tiers';
import { matchInto, chainExtsInto } from './match';
import { creditInto } from './credit';
import { dumpDevice, dumpTier } from './dump';
import { hashBlocksInto } from './hashing';

/** A new index (one per partition); returns its handle, or -1. */
export function indexNew(): i32 { scratchInit(); return indexCreate(); }

/** Free an index and all its memory. */
export function indexFree(h: i32): void {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return;
  const p0 = ix.p0;
  for (let i: u32 = 0; i < p0.used; i++) {
    const r = rec(p0, i), hold = load<u32>(r, N_HOLD);
    if (hold == FREED) continue;
    if (hold != 0 && (hold & 1) == 0) setFree(<usize>hold);
    freeKids(r);
  }
  for (let t = 1; t < TIER_COUNT; t++) {
    const p = pool(ix, t);
    for (let i: u32 = 0; i < p.used; i++) {
      const c = load<u32>(rec(p, i), 20);
      if (c != FREED && c >= 2) vecFree(<usize>load<u32>(rec(p, i), 24));
    }
  }
  indexRelease(h);
}

/** Make slots [0, n) usable; returns the slot capacity (TS sizes the output regions by it). */
export function indexSlots(h: i32, n: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  ensureSlots(ix, <u32>n);
  return <i32>ix.slotCap;
}

/**
 * True when the engine hashes of one store are distinct and none equals the parent. Small
 * events compare pairwise; larger ones use an open-addressing set in R_TMP.
 */
function validSequence(exts: usize, n: i32, hasParent: bool, parent: u64): bool {
  if (hasParent) {
    for (let i = 0; i < n; i++) if (load<u64>(exts + (<usize>i << 3)) == parent) return false;
  }
  if (n <= 16) {
    for (let i = 1; i < n; i++) {
      const e = load<u64>(exts + (<usize>i << 3));
      for (let j = 0; j < i; j++) if (load<u64>(exts + (<usize>j << 3)) == e) return false;
    }
    return true;
  }
  let bits: u32 = 5;
  while ((<i32>1 << bits) < n * 2) bits++;
  const cells = <usize>1 << bits;
  const tmp = reserve(R_TMP, cells * 9);
  const used = tmp + (cells << 3);
  memory.fill(used, 0, cells);
  const mask = <u32>cells - 1;
  for (let i = 0; i < n; i++) {
    const e = load<u64>(exts + (<usize>i << 3));
    let k = <u32>((e * 0x9E3779B97F4A7C15) >> <u64>(64 - bits));
    while (load<u8>(used + k) != 0) {
      if (load<u64>(tmp + (<usize>k << 3)) == e) return false;
      k = (k + 1) & mask;
    }
    store<u8>(used + k, 1);
    store<u64>(tmp + (<usize>k << 3), e);
  }
  return true;
}

function applyStore(ix: Index, slot: i32, tier: i32, hasParent: i32, n: i32): i32 {
  if (<u32>slot >= ix.slotCap) return ST_BAD_SLOT;
  const exts = regionPtr(R_HASH_B), locals = regionPtr(R_HASH_A);
  const parent = paramU64(P_PARENT);
  if (!validSequence(exts, n, hasParent != 0, parent)) return ST_INVALID_SEQUENCE;
  if (tier == TIER_DEVICE) return deviceStore(ix, <u32>slot, hasParent != 0, parent, exts, locals, n);
  return tierStore(ix, <u32>slot, tier, hasParent != 0, parent, exts, locals, n);
}

/** Stored: n blocks (engine hashes R_HASH_B, local hashes R_HASH_A). Returns applied or status < 0. */
export function storeBlocks(h: i32, slot: i32, tier: i32, hasParent: i32, n: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  return applyStore(ix, slot, tier, hasParent, n);
}

/**
 * Stored with token ids: hashes the tokens (R_TOKENS, seed P_SEED, optional mm data) into
 * R_HASH_A, then stores min(nExt, complete blocks) blocks. One call per engine event.
 */
export function storeTokens(h: i32, slot: i32, tier: i32, hasParent: i32, nExt: i32,
  nTokens: i32, blockSize: i32, eagle: i32, withMm: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  const blocks = hashBlocksInto(regionPtr(R_HASH_A), regionPtr(R_TOKENS), nTokens, blockSize, eagle != 0,
    withMm != 0 ? regionPtr(R_MM_COUNTS) : 0, withMm != 0 ? regionPtr(R_MM_HASHES) : 0, paramU64(P_SEED));
  return applyStore(ix, slot, tier, hasParent, blocks < nExt ? blocks : nExt);
}

/** Removed: n engine hashes in R_HASH_B. Returns how many the slot held, or status < 0. */
export function removeBlocks(h: i32, slot: i32, tier: i32, n: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  if (<u32>slot >= ix.slotCap) return ST_BAD_SLOT;
  const exts = regionPtr(R_HASH_B);
  if (tier == TIER_DEVICE) return deviceRemove(ix, <u32>slot, exts, n);
  return tierRemove(ix, <u32>slot, tier, exts, n);
}

/** Cleared: every block of the slot on `tier` (-1: all tiers). */
export function clearSlot(h: i32, slot: i32, tier: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  if (<u32>slot >= ix.slotCap) return ST_BAD_SLOT;
  for (let t = 0; t < TIER_COUNT; t++) {
    if (tier >= 0 && t != tier) continue;
    if (t == TIER_DEVICE) {
      const m = slotMapIfAny(ix, <u32>slot, 0);
      if (m == 0) continue;
      deviceClear(ix, <u32>slot, reserve(R_TMP, (<usize>tabCount(m) << 2) + 4));
    } else {
      const m = slotMapIfAny(ix, <u32>slot, t);
      if (m != 0) tierClear(ix, <u32>slot, t, reserve(R_TMP, (<usize>tabCount(m) << 2) + 4));
    }
  }
  return 0;
}

/** Match the n local hashes in R_HASH_A; rows go to R_OUT_SLOT/DEV/HOST/DISK/EXTN. */
export function matchQuery(h: i32, n: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  if (regionCap(R_OUT_SLOT) < (<usize>ix.slotCap << 2)) return ST_BAD_SLOT;
  const path = reserve(R_TMP, (<usize>max(n, 0) << 2) + 4);
  return matchInto(ix, regionPtr(R_HASH_A), n, path, regionPtr(R_OUT_SLOT), regionPtr(R_OUT_DEV),
    regionPtr(R_OUT_HOST), regionPtr(R_OUT_DISK), regionPtr(R_OUT_EXTN));
}

/** Ext hashes `slot` holds along the device path of the n hashes in R_HASH_A, into R_HASH_B; returns the depth. */
export function chainExts(h: i32, n: i32, slot: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  if (regionCap(R_HASH_B) < (<usize>n << 3)) return ST_BAD_SLOT;
  return chainExtsInto(ix, regionPtr(R_HASH_A), n, <u32>slot, regionPtr(R_HASH_B));
}

/** Cache credit of the first `rows` match rows (see credit.ts for the columns written). */
export function creditRows(rows: i32, blockSize: f64, isl: f64, credit: f64, hostW: f64, diskW: f64): void {
  creditInto(rows, blockSize, isl, credit, hostW, diskW,
    regionPtr(R_OUT_DEV), regionPtr(R_OUT_HOST), regionPtr(R_OUT_DISK), regionPtr(R_OUT_EXTN),
    regionPtr(R_OUT_F64A), regionPtr(R_OUT_F64B), regionPtr(R_OUT_U32A), regionPtr(R_OUT_U32B));
}

/** Blocks the slot holds on a tier. */
export function treeSize(h: i32, slot: i32, tier: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0 || <u32>slot >= ix.slotCap) return 0;
  const m = slotMapIfAny(ix, <u32>slot, tier);
  return m == 0 ? 0 : <i32>tabCount(m);
}

/** Sum of all slots' holdings on a tier (dump sizing). */
export function holdingCount(h: i32, tier: i32): i32 {
  const ix = indexOf(h);
  return changetype<usize>(ix) == 0 ? 0 : <i32>holdings(ix, tier);
}

/** Device holdings whose slot does not hold the node's parent (0: the match's fast walk applies). */
export function orphanCount(h: i32): i32 {
  const ix = indexOf(h);
  return changetype<usize>(ix) == 0 ? 0 : <i32>ix.orphans;
}

/** Live records of a tier (tree nodes without the root, or edges). */
export function recordCount(h: i32, tier: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return 0;
  const p = pool(ix, tier);
  return <i32>p.live - (tier == TIER_DEVICE ? 1 : 0);
}

/**
 * Dump one tier's holdings: rows as u32 pairs in R_OUT_U32A and u64 triples in R_DUMP_U64
 * (TS reserves both for holdingCount rows first). Returns rows, or -1 when they do not fit.
 */
export function dumpRows(h: i32, tier: i32): i32 {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return ST_BAD_INDEX;
  const need = <usize>holdings(ix, tier);
  if (regionCap(R_OUT_U32A) < need * 8 || regionCap(R_DUMP_U64) < need * 24) return -1;
  if (tier == TIER_DEVICE) {
    const queue = reserve(R_TMP, (<usize>ix.p0.live << 2) + 4);
    return <i32>dumpDevice(ix, queue, regionPtr(R_OUT_U32A), regionPtr(R_DUMP_U64));
  }
  return <i32>dumpTier(ix, tier, regionPtr(R_OUT_U32A), regionPtr(R_DUMP_U64));
}

// Keep the unused-import checker quiet for symbols used only in some builds.
export const NO_NODE: u32 = NONE;
