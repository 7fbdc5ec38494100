/**
 * select-service for browsers (package export `select-service/browser`, bundled by
 * scripts/build.mjs into one ES module with the wasm embedded): the isomorphic selection core and
 * the routing-policy simulator. No Node APIs. The wasm module is compiled synchronously on first
 * use, which browsers allow in Web Workers and, for a module this small, on the main thread.
 */
export * from './core/index.js';
export * from './sim/index.js';
