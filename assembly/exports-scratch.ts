// Scratch-region exports: TS asks for pointers and capacities once, and reserves on cold paths.
import { regionPtr, regionCap, reserve, scratchInit } from './scratch';

/** Byte pointer of region r (see layout.ts). */
export function scratchPtr(r: i32): usize { scratchInit(); return regionPtr(r); }
/** Capacity of region r in bytes. */
export function scratchCap(r: i32): usize { scratchInit(); return regionCap(r); }
/** Grow region r to hold `bytes` bytes (contents not kept); returns the new pointer. */
export function scratchReserve(r: i32, bytes: usize): usize { return reserve(r, bytes); }
