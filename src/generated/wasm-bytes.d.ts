/** The release wasm module's length in bytes; written by scripts/build.mjs into build/dist/src/generated/. */
export declare const wasmSize: number;
/** The release wasm module, raw-deflated (zlib level 9) then as base-91 text (decoded by src/core/index/wasm-source.ts). */
export declare const wasmDeflated91: string;
