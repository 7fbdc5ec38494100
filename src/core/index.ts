/** The isomorphic core: wasm prefix index, hashing, reference model. No `node:` imports. */
export { Wasm, getWasm } from './index/wasm.js';
export { WasmPrefixIndex } from './index/wasm-index.js';
export { Tier, TIERS, TIER_NAMES, StoreStatus, canonicalHoldings } from './index/index-types.js';
export type { BlockRef, Holding, MatchRow, PrefixIndexModel } from './index/index-types.js';
export { KvIndex, holdingsToEvents } from './index/kv-index.js';
export type { IndexCounters, OverlapRow, RankOverlap, RouterEvent, CreditWeights } from './index/kv-index.js';
export { SlotTable } from './index/slots.js';
export type { WorkerRank } from './index/slots.js';
export { parseRouterConfig, defaultRouterConfig, queueingEnabled, ConfigError, LIMITS, RouterConfigOverrideSchema, applyOverride } from './config/config.js';
export type { RouterConfig } from './config/config.js';
export { SelectionError, errorBody, toSelectionError, partitionLabel } from './errors.js';
export { deriveKeyedSeeds, parseTrackingKey, publicSeed } from './index/tracking-hash.js';
export { SelectionCore, seededRng, systemRng, systemClock } from './core.js';
export type {
  CoreOptions, CoreResult, CoreHooks, IndexFeed, FeedPartition, LifecycleEvent, ReplicaLifecycle, AffinityEvent,
  SelectionCacheConfig, SessionAffinityConfig,
} from './core.js';
export { SessionAffinityTable } from './booking/affinity.js';
export type { AffinityMode, AffinityTarget, AffinityVersion } from './booking/affinity.js';
export {
  PolicyRegistry, WorkerInputs, CandidateRowView, selectionContext, runPolicy, DEFAULT_POLICY_TYPE, defaultPolicyFactory,
  createDefaultPolicyFactory, DEFAULT_COST_SETTINGS,
} from './select/policy.js';
export type {
  WorkerSelectionPolicy, WorkerFilter, WorkerScorer, WorkerPicker, PickerRow, CandidateView, WorkerSelectionContext,
  PolicyFactory, PolicyPartition, DefaultCostSettings,
} from './select/policy.js';
export * from './wire/schemas.js';
export type * from './wire/types.js';
