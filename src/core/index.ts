/**
 * `select-service/core`: the isomorphic selection core (no `node:` imports; runs in Node and in
 * browsers). Everything a host needs to embed it — the core and its options, configuration,
 * errors, custom policies, the request schemas and response types, the events it publishes for
 * replica sync, u64-exact JSON — and nothing of its internals. The list is explicit: what is
 * not here is not part of the API (test/unit/api-surface.test.ts keeps it equal to the README).
 */
export { SelectionCore } from './core.js';
export type { CoreResult } from './core.js';
export type {
  CoreHooks, CoreOptions, SelectionCacheConfig, SelectionEvent, SelectionOutcome, SelectionRoute, SessionAffinityConfig,
} from './options.js';
export type { WorkerCatalog } from './catalog/worker-catalog.js';
export type { Partition } from './catalog/partition.js';
export { seededRng, systemClock, systemRng } from './random.js';
export type { Clock, Rng } from './random.js';

// configuration and errors
export { ConfigError, LIMITS, defaultRouterConfig, parseRouterConfig } from './config/config.js';
export type { RouterConfig, RouterConfigOverride } from './config/config.js';
export { ERROR_CATALOGUE, SelectionError, errorBody, toSelectionError } from './errors.js';
export type { ErrorCode, QueueRejectionDetails } from './errors.js';

// custom worker-selection policies
export {
  DEFAULT_COST_SETTINGS, DEFAULT_POLICY_TYPE, PolicyRegistry, WorkerInputs, createDefaultPolicyFactory, defaultPolicyFactory,
} from './select/policy.js';
export type {
  CandidateView, DefaultCostSettings, PickerRow, PolicyFactory, PolicyPartition, WorkerFilter, WorkerPicker, WorkerScorer,
  WorkerSelectionContext, WorkerSelectionPolicy,
} from './select/policy.js';

// the prefix index a host feeds (hosts without the Node service's ZMQ ingress)
export { KvIndex } from './index/kv-index.js';
export type { RouterEvent } from './index/kv-index.js';
export { Tier, TIER_NAMES } from './index/index-types.js';
export { KV_FEED_STATES } from './index/feed.js';
export type { FeedPartition, IndexFeed, KvFeedState, KvFeedStatus } from './index/feed.js';
export { deriveKeyedSeeds, parseTrackingKey, publicSeed } from './index/tracking-hash.js';
// a precompiled wasm index, for runtimes that refuse to compile one (Cloudflare Workers)
export { useWasmModule } from './index/wasm.js';

// the wire: request schemas, response types, replica events, u64-exact JSON
export {
  FilterQuerySchema, OutputBlockRequestSchema, PeerRequestSchema, PromptQuerySchema, ReservationRequestSchema,
  SelectAndReserveRequestSchema, SelectRequestSchema, WorkerPatchSchema, WorkerRequestSchema,
} from './wire/schemas.js';
export type {
  FilterQuery, OutputBlockRequest, PromptQueryInput, ReservationRequestInput, SelectAndReserveRequestInput, SelectRequestInput,
  WorkerPatchInput, WorkerRequestInput,
} from './wire/schemas.js';
export type {
  DumpResponse, KvHint, Lifecycle, MetricsExposition, ModelLoadResponse, OverlapScoreRow, OverlapScoresResponse, OverlapSummary,
  PotentialLoad, ReadyResponse, ReplicaPeersApi, ReservationResponse, SelectOptions, SelectResponse, SelectionApi, ServiceApi,
  StatusOk, WorkerLoad, WorkerRecord,
} from './wire/types.js';
export type { AffinityEvent, BookingRef, LifecycleEvent } from './wire/events.js';
export { parseJson, stringifyJson } from './wire/json.js';
