/** The release wasm module, base64; written by scripts/build.mjs into build/dist/src/generated/. */
export declare const wasmBase64: string;
