// The export list only. Every hot export takes lengths and reads/writes the scratch regions of
// layout.ts; none allocates on the steady state.
export { scratchPtr, scratchCap, scratchReserve } from './exports-scratch';
// --- hashing (xxh3.ts, hashing.ts) ---
export { xxh3Bytes, saltSeed, hashBlocks, chainHashes } from './hashing';
// --- prefix index (radix.ts, tiers.ts, credit.ts) ---
// --- layout constants, read by src/core/wasm.ts so TS never repeats them ---
export {
  R_PARAMS, R_HASH_A, R_HASH_B, R_HASH_C, R_TOKENS, R_MM_COUNTS, R_MM_HASHES, R_BYTES,
  R_OUT_SLOT, R_OUT_DEV, R_OUT_HOST, R_OUT_DISK, R_OUT_EXTN, R_OUT_F64A, R_OUT_F64B,
  R_OUT_U32A, R_OUT_U32B, R_DUMP_U64, R_TMP,
  P_SEED, P_CHAIN_SEED, P_RESULT, P_PARENT, P_AUX,
} from './layout';
export {
  indexNew, indexFree, indexSlots, storeBlocks, storeTokens, removeBlocks, clearSlot, matchQuery,
  creditRows, treeSize, holdingCount, recordCount, orphanCount, dumpRows, chainExts,
} from './exports-index';
// --- allocator statistics (mem.ts) ---
export { memArenaBytes, memLiveBytes } from './mem';
