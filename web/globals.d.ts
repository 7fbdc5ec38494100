/** Replaced at bundle time by scripts/build.mjs (esbuild `define`). */
/** The first requests of the Mooncake conversation trace, JSONL. */
declare const __SAMPLE_TRACE__: string;
/** The Web Worker bundle (web/worker.ts), as source text for a blob URL. */
declare const __WORKER_SOURCE__: string;
