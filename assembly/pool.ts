// Fixed-size record pools in segments, with a free list, plus the owner vectors of tier edges.
//
//   Pool (unmanaged): dir | dirCap | segs | used (high water) | free head | live | size | link | table
//   dir: usize[dirCap], segment pointers; segment k holds records [k * SEG_RECS, (k + 1) * SEG_RECS)
//
// A record is addressed by index: rec(p, i) = dir[i >> SEG_BITS] + (i & SEG_MASK) * size. Growing
// the pool adds a segment (SEG_RECS records) and never moves a record, so no call copies a pool
// (the realloc doubling this replaced copied the whole pool: single stores of 20-80 ms while an
// index grew). Freed records are marked with FREED in their count field (+20 in every record
// layout) and reused first: memory stays flat under churn.
import { NONE, FREED } from './layout';
import { memAlloc, memFree, memRealloc } from './mem';

const SEG_BITS: u32 = 12;
const SEG_RECS: u32 = 1 << SEG_BITS;
const SEG_MASK: u32 = SEG_RECS - 1;

@unmanaged export class Pool {
  dir: usize;
  dirCap: u32;
  segs: u32;
  used: u32;
  free: u32;
  live: u32;
  size: u32;      // bytes per record
  link: u32;      // offset of the free-list link field
  table: usize;   // rectable of this pool's records (children / edges)
}

export const COUNT_OFF: usize = 20;

export function poolNew(size: u32, link: u32): Pool {
  const p = changetype<Pool>(memAlloc(offsetof<Pool>()));
  p.dirCap = 4;
  p.dir = memAlloc(<usize>p.dirCap << 2);
  p.segs = 0;
  p.used = 0;
  p.free = NONE;
  p.live = 0;
  p.size = size;
  p.link = link;
  p.table = 0;
  return p;
}

export function poolFree(p: Pool): void {
  const bytes = <usize>SEG_RECS * p.size;
  for (let k: u32 = 0; k < p.segs; k++) memFree(load<usize>(p.dir + (<usize>k << 2)), bytes);
  memFree(p.dir, <usize>p.dirCap << 2);
  memFree(changetype<usize>(p), offsetof<Pool>());
}

@inline export function rec(p: Pool, i: u32): usize {
  return load<usize>(p.dir + (<usize>(i >> SEG_BITS) << 2)) + <usize>(i & SEG_MASK) * p.size;
}

/** rec() for a pool of 32-byte records (device nodes): the size is a shift, not a load. */
@inline export function rec32(p: Pool, i: u32): usize {
  return load<usize>(p.dir + (<usize>(i >> SEG_BITS) << 2)) + (<usize>(i & SEG_MASK) << 5);
}

/** A zeroed record index (may add a segment; no record moves). */
export function poolAlloc(p: Pool): u32 {
  let i = p.free;
  if (i != NONE) {
    p.free = load<u32>(rec(p, i) + p.link);
  } else {
    if (p.used == p.segs << SEG_BITS) {
      if (p.segs == p.dirCap) {
        p.dir = memRealloc(p.dir, <usize>p.dirCap << 2, <usize>p.dirCap << 3);
        p.dirCap <<= 1;
      }
      store<usize>(p.dir + (<usize>p.segs << 2), memAlloc(<usize>SEG_RECS * p.size));
      p.segs++;
    }
    i = p.used++;
  }
  // Zeroed with word stores: a 32- or 40-byte memory.fill is a call into the engine, which
  // showed up as 7.6% of the index bench's profile.
  const r = rec(p, i);
  for (let o: u32 = 0; o < p.size; o += 8) store<u64>(r + o, 0);
  p.live++;
  return i;
}

export function poolRelease(p: Pool, i: u32): void {
  const r = rec(p, i);
  store<u32>(r + COUNT_OFF, FREED);
  store<u32>(r + p.link, p.free);
  p.free = i;
  p.live--;
}

// --- owner vectors of tier edges: [cap u32 | pad u32 | slots u32 x cap] ---

@inline export function vecCap(v: usize): u32 { return load<u32>(v); }
@inline export function vecSlots(v: usize): usize { return v + 8; }
@inline function vecBytes(cap: u32): usize { return 8 + (<usize>cap << 2); }

/** A vector of `cap` entries. */
export function vecNew(cap: u32): usize {
  const v = memAlloc(vecBytes(cap));
  store<u32>(v, cap);
  return v;
}

export function vecFree(v: usize): void { memFree(v, vecBytes(vecCap(v))); }

/** Double a vector holding `n` entries; returns the new pointer. */
export function vecGrow(v: usize, n: u32): usize {
  const w = vecNew(vecCap(v) << 1);
  memory.copy(vecSlots(w), vecSlots(v), <usize>n << 2);
  vecFree(v);
  return w;
}
