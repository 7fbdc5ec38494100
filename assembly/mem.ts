// The index's allocator: size classes with sized frees, over linear memory grown in bounded steps.
//
// Why not heap.alloc (the runtime's TLSF): TLSF grows linear memory by doubling it (the std
// runtime's `max(pagesBefore, pagesNeeded)`), so an index of 17 MiB sits in 32 MiB, and the
// next growth of a 1 GiB process asks for another GiB at once. Here memory grows by what is
// needed, at least GROW_PAGES (1 MiB) at a time, so slack stays below a MiB. Nothing on a hot
// path calls heap.*, so TLSF keeps to the pages it got at start-up.
//
// Every caller knows the size of what it frees (records, cells, holder sets carry their
// capacity), so blocks have no header: memFree(p, size) puts p on the free list of size's class.
//
//   classes: 16-byte steps up to 256 bytes, then 4 per power of two (2^b + k * 2^(b-2), k = 1..4):
//   at most 25% rounding above 256 bytes, none for powers of two (pool segments, cell arrays).
//   Free blocks of a class are reused first (LIFO list, next pointer in the block's first word);
//   otherwise blocks are cut from the current arena run; blocks of 64 bytes and more start on a
//   64-byte line. Freed blocks stay in their class (no coalescing): memory stays flat under churn.

const GROW_PAGES: i32 = 16;
const CLASSES: i32 = 112;
const heads = memory.data(CLASSES * 4);

let bump: usize = 0;      // next free byte of the arena run
let end: usize = 0;       // end of the arena run
let arena: usize = 0;     // bytes obtained with memory.grow
let live: usize = 0;      // bytes in allocated blocks (class sizes)

/** Class index of a size > 0. */
@inline function classOf(size: usize): i32 {
  if (size <= 16) return 0;
  if (size <= 256) return <i32>((size + 15) >> 4) - 1;
  const b = 31 - <i32>clz<u32>(<u32>(size - 1));   // 2^b < size <= 2^(b+1)
  const step = <usize>1 << (b - 2);
  const k = <i32>((size - (<usize>1 << b) + step - 1) >> (b - 2));   // 1..4
  return 16 + (b - 8) * 4 + (k - 1);
}

/** Byte size of class c. */
@inline function classSize(c: i32): usize {
  if (c < 16) return <usize>(c + 1) << 4;
  const b = ((c - 16) >> 2) + 8;
  return (<usize>1 << b) + (<usize>((c - 16) & 3) + 1) * (<usize>1 << (b - 2));
}

function grow(bytes: usize): void {
  let pages = <i32>((bytes + 0xffff) >> 16);
  if (pages < GROW_PAGES) pages = GROW_PAGES;
  const before = memory.grow(pages);
  if (before < 0) unreachable(); // out of memory
  const start = <usize>before << 16;
  if (start != end) bump = start; // someone else grew memory meanwhile: start a new run
  end = start + (<usize>pages << 16);
  arena += <usize>pages << 16;
}

/** A block of at least `size` bytes (contents undefined). */
export function memAlloc(size: usize): usize {
  const c = classOf(size);
  const cell = heads + (<usize>c << 2);
  const head = <usize>load<u32>(cell);
  const bytes = classSize(c);
  live += bytes;
  if (head != 0) {
    store<u32>(cell, load<u32>(head));
    return head;
  }
  let p = bytes >= 64 ? (bump + 63) & ~<usize>63 : bump;
  if (p + bytes > end) {
    grow(bytes + 64);
    p = bytes >= 64 ? (bump + 63) & ~<usize>63 : bump;
  }
  bump = p + bytes;
  return p;
}

/** A zero-filled block of at least `size` bytes. */
export function memAllocZero(size: usize): usize {
  const p = memAlloc(size);
  memory.fill(p, 0, size);
  return p;
}

/** Give back a block of `size` bytes (the size it was allocated with). */
export function memFree(p: usize, size: usize): void {
  if (p == 0) return;
  const c = classOf(size);
  const cell = heads + (<usize>c << 2);
  store<u32>(p, load<u32>(cell));
  store<u32>(cell, <u32>p);
  live -= classSize(c);
}

/** Move a block to a larger (or smaller) size, keeping min(old, new) bytes. */
export function memRealloc(p: usize, oldSize: usize, newSize: usize): usize {
  if (p != 0 && classOf(oldSize) == classOf(newSize)) return p;
  const q = memAlloc(newSize);
  if (p != 0) {
    memory.copy(q, p, oldSize < newSize ? oldSize : newSize);
    memFree(p, oldSize);
  }
  return q;
}

/** Bytes of linear memory this allocator obtained. */
export function memArenaBytes(): usize { return arena; }
/** Bytes in allocated blocks (rounded to their classes). */
export function memLiveBytes(): usize { return live; }
