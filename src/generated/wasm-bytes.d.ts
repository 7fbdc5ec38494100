/** The release wasm module's length in bytes; written by scripts/build.mjs into build/dist/src/generated/. */
export declare const wasmSize: number;
/** The release wasm module, raw-deflated (zlib level 9) then base64 (src/core/index/inflate.ts decodes it). */
export declare const wasmDeflatedBase64: string;
