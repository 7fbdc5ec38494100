// Fixed I/O regions shared with TS: the only input channel for hot calls (see layout.ts).
import { REGION_COUNT, R_PARAMS } from './layout';
import { memAlloc, memFree } from './mem';

const INITIAL_BYTES: usize = 64 * 1024;

// Region table: pointer and capacity in bytes per region, in a static block.
const ptrs = memory.data(sizeof<usize>() * 32);
const caps = memory.data(sizeof<usize>() * 32);
let initialized = false;

function init(): void {
  if (initialized) return;
  initialized = true;
  for (let r = 0; r < REGION_COUNT; r++) {
    const bytes = r == R_PARAMS ? <usize>512 : INITIAL_BYTES;
    const p = memAlloc(bytes);
    memory.fill(p, 0, bytes);
    store<usize>(ptrs + (<usize>r << alignof<usize>()), p);
    store<usize>(caps + (<usize>r << alignof<usize>()), bytes);
  }
}

/** Pointer of a region (stable until the next scratchReserve of that region). */
@inline export function regionPtr(r: i32): usize {
  return load<usize>(ptrs + (<usize>r << alignof<usize>()));
}

/** Capacity of a region in bytes. */
@inline export function regionCap(r: i32): usize {
  return load<usize>(caps + (<usize>r << alignof<usize>()));
}

/** Make region r hold at least `bytes` bytes (cold; may grow memory). Contents are not kept. */
export function reserve(r: i32, bytes: usize): usize {
  init();
  let cap = regionCap(r);
  if (cap >= bytes) return regionPtr(r);
  while (cap < bytes) cap <<= 1;
  memFree(regionPtr(r), regionCap(r));
  const p = memAlloc(cap);
  store<usize>(ptrs + (<usize>r << alignof<usize>()), p);
  store<usize>(caps + (<usize>r << alignof<usize>()), cap);
  return p;
}

export function scratchInit(): void { init(); }

@inline export function paramU64(i: i32): u64 { return load<u64>(regionPtr(R_PARAMS) + (<usize>i << 3)); }
@inline export function setParamU64(i: i32, v: u64): void { store<u64>(regionPtr(R_PARAMS) + (<usize>i << 3), v); }
