/**
 * select-service for browsers (package export `select-service/browser`, bundled by
 * scripts/build.mjs into one ES module with the wasm embedded): the isomorphic selection core
 * (`select-service/core`, re-exported whole) and the routing-policy simulator. No Node APIs. The
 * wasm module is compiled synchronously on first use, which browsers allow in Web Workers and,
 * for a module this small, on the main thread.
 */
export * from './core/index.js';
export { DEFAULT_POLICIES, simulate } from './sim/simulate.js';
export type { SimProgress, SimulationOptions, SimulationResult } from './sim/simulate.js';
export { parseTrace } from './sim/trace.js';
export type { Trace } from './sim/trace.js';
export { formatReport, reportJson } from './sim/report.js';
export { compileScorer } from './sim/custom-scorer.js';
export type { FleetConfig } from './sim/fleet.js';
export type { PolicyMetrics } from './sim/metrics.js';
