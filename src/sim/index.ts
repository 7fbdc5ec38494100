/**
 * The routing-policy simulator (isomorphic: no `node:` imports): Mooncake traces replayed in
 * virtual time through the real SelectionCore and wasm index against a simulated fleet.
 */
export { parseTrace, sessionOf, headLines, TRACE_BLOCK_TOKENS } from './trace.js';
export type { Trace, ParseTraceOptions } from './trace.js';
export { BlockIds } from './block-ids.js';
export { VirtualClock, EventQueue } from './event-queue.js';
export { KvCache } from './kv-cache.js';
export { SimEngine, newRequest } from './engine.js';
export type { EngineParams, SimRequest, KvEventSink, EngineHooks, EngineCounters } from './engine.js';
export { PERF_PROFILES, DEFAULT_PROFILE, perfProfile, stepMs } from './perf-model.js';
export type { StepCost, PerfProfile } from './perf-model.js';
export { DEFAULT_FLEET, fleetConfig, engineParams, registerFleet, workerIds, SIM_MODEL, SIM_GROUP } from './fleet.js';
export type { FleetConfig } from './fleet.js';
export { POLICY_KINDS, parsePolicies, policySetup, minCostPicker, leastLoadedScorer } from './policies.js';
export type { PolicyKind, PolicySpec, CostKnobs, PolicySetup } from './policies.js';
export { EXAMPLE_SCORER, compileScorer, scorerOf } from './custom-scorer.js';
export type { ScoreFn } from './custom-scorer.js';
export { MetricsRecorder, percentiles, TTFT_EDGES_MS } from './metrics.js';
export type { PolicyMetrics, Percentiles } from './metrics.js';
export { simulate, DEFAULT_POLICIES, DEFAULT_KNOBS } from './simulate.js';
export type { SimulationOptions, SimulationResult, SimProgress } from './simulate.js';
export { formatReport, reportJson, REPORT_COLUMNS } from './report.js';
