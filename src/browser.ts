/**
 * select-service for browsers (package export `select-service/browser`, bundled by
 * scripts/build.mjs into one ES module with the wasm embedded): the isomorphic selection core and
 * the routing-policy simulator. No Node APIs. The wasm module is compiled synchronously on first
 * use, which browsers allow in Web Workers and, for a module this small, on the main thread.
 */
export * from './core/index.js';
export { SelectionCore, seededRng, systemRng, systemClock } from './core/core.js';
export type { CoreOptions, CoreResult, SelectionCacheConfig } from './core/core.js';
export {
  PolicyRegistry, WorkerInputs, createDefaultPolicyFactory, defaultPolicyFactory, selectionContext, runPolicy,
  DEFAULT_COST_SETTINGS, DEFAULT_POLICY_TYPE,
} from './core/policy.js';
export type {
  WorkerSelectionPolicy, WorkerFilter, WorkerScorer, WorkerPicker, PickerRow, CandidateView, WorkerSelectionContext,
  PolicyFactory, PolicyPartition, DefaultCostSettings,
} from './core/policy.js';
export type { Clock, Rng, SelectResponse, WorkerRecord } from './core/types.js';
export * from './sim/index.js';
