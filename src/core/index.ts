/** The isomorphic core: wasm prefix index, hashing, reference model. No `node:` imports. */
export { Wasm, getWasm } from './wasm.js';
export { WasmPrefixIndex } from './wasm-index.js';
export { Tier, TIERS, TIER_NAMES, StoreStatus, canonicalHoldings } from './index-types.js';
export type { BlockRef, Holding, MatchRow, PrefixIndexModel } from './index-types.js';
export { KvIndex, holdingsToEvents } from './kv-index.js';
export type { IndexCounters, OverlapRow, RankOverlap, RouterEvent, CreditWeights } from './kv-index.js';
export { SlotTable } from './slots.js';
export type { WorkerRank } from './slots.js';
export { parseRouterConfig, defaultRouterConfig, queueingEnabled, ConfigError, LIMITS, RouterConfigOverrideSchema, applyOverride } from './config.js';
export type { RouterConfig } from './config.js';
export { SelectionError, errorBody, toSelectionError, partitionLabel } from './errors.js';
export { deriveKeyedSeeds, parseTrackingKey, publicSeed } from './tracking-hash.js';
export { SelectionCore, seededRng, systemRng, systemClock } from './core.js';
export type {
  CoreOptions, CoreResult, CoreHooks, IndexFeed, FeedPartition, LifecycleEvent, ReplicaLifecycle, AffinityEvent,
  SelectionCacheConfig, SessionAffinityConfig,
} from './core.js';
export { SessionAffinityTable } from './affinity.js';
export type { AffinityMode, AffinityTarget, AffinityVersion } from './affinity.js';
export {
  PolicyRegistry, WorkerInputs, CandidateRowView, selectionContext, runPolicy, DEFAULT_POLICY_TYPE, defaultPolicyFactory,
  createDefaultPolicyFactory, DEFAULT_COST_SETTINGS,
} from './policy.js';
export type {
  WorkerSelectionPolicy, WorkerFilter, WorkerScorer, WorkerPicker, PickerRow, CandidateView, WorkerSelectionContext,
  PolicyFactory, PolicyPartition, DefaultCostSettings,
} from './policy.js';
export * from './schemas.js';
export type * from './types.js';
