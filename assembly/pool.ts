// Fixed-size record pools with a free list, plus the small-vector helpers for holder sets.
//
//   Pool (unmanaged, 28 bytes): base ptr | cap | used (high water) | free head | live | table
//   | link offset (where a free record keeps its next-free index)
//
// Records are addressed by index (base + i * size), so growing the pool (heap.realloc) moves
// memory without invalidating any stored index. Freed records are marked with FREED in their
// count field (+20 in both record layouts) and reused first: memory stays flat under churn.
import { NONE, FREED } from './layout';
import { recNew, recFree } from './rectable';

@unmanaged export class Pool {
  base: usize;
  cap: u32;
  used: u32;
  free: u32;
  live: u32;
  table: usize;   // rectable of this pool's records (children / edges)
  size: u32;      // bytes per record
  link: u32;      // offset of the free-list link field
}

export const COUNT_OFF: usize = 20;

export function poolNew(size: u32, link: u32, keyedByA: bool, initial: u32): Pool {
  const p = changetype<Pool>(heap.alloc(offsetof<Pool>()));
  p.base = heap.alloc(<usize>initial * size);
  p.cap = initial;
  p.used = 0;
  p.free = NONE;
  p.live = 0;
  p.table = recNew(keyedByA);
  p.size = size;
  p.link = link;
  return p;
}

export function poolFree(p: Pool): void {
  heap.free(p.base);
  recFree(p.table);
  heap.free(changetype<usize>(p));
}

@inline export function rec(p: Pool, i: u32): usize { return p.base + <usize>i * p.size; }

/** A zeroed record index (may grow the pool: re-read `p.base` afterwards). */
export function poolAlloc(p: Pool): u32 {
  let i = p.free;
  if (i != NONE) {
    p.free = load<u32>(rec(p, i) + p.link);
  } else {
    if (p.used == p.cap) {
      const cap = p.cap << 1;
      p.base = heap.realloc(p.base, <usize>cap * p.size);
      p.cap = cap;
    }
    i = p.used++;
  }
  memory.fill(rec(p, i), 0, p.size);
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

// --- holder vectors: [cap u32 | pad u32 | slots u32 x cap | (exts u64 x cap when wide)] ---

@inline export function vecCap(v: usize): u32 { return load<u32>(v); }
@inline export function vecSlots(v: usize): usize { return v + 8; }
@inline export function vecExts(v: usize): usize { return v + 8 + (<usize>load<u32>(v) << 2); }

/** A vector of `cap` (even) entries; `wide` adds the u64 ext column. */
export function vecNew(cap: u32, wide: bool): usize {
  const v = heap.alloc(8 + (<usize>cap << 2) + (wide ? <usize>cap << 3 : 0));
  store<u32>(v, cap);
  return v;
}

/** Double a vector holding `n` entries; returns the new pointer. */
export function vecGrow(v: usize, n: u32, wide: bool): usize {
  const cap = vecCap(v);
  const w = vecNew(cap << 1, wide);
  memory.copy(vecSlots(w), vecSlots(v), <usize>n << 2);
  if (wide) memory.copy(vecExts(w), vecExts(v), <usize>n << 3);
  heap.free(v);
  return w;
}
