/**
 * What a host gives a {@link SelectionCore}: injected time and randomness, limits, the KV-event
 * feed, custom policies, session affinity, and hooks that receive the events replica sync
 * publishes.
 */
import type { RouterPolicyConfig } from './select/policy-config.js';
import type { PolicyRegistry } from './select/policy.js';
import type { AffinityMode } from './booking/affinity.js';
import type { IndexFeed } from './index/feed.js';
import type { AffinityEvent, LifecycleEvent } from './wire/events.js';
import type { Clock, Rng } from './random.js';

/** Host hooks. */
export interface CoreHooks {
  /** Called after a local admission, prefill completion (also repeated) and free. */
  onLifecycle?(ev: LifecycleEvent): void;
  /** Called when a session binding is committed, rebound or refreshed (affinity on). */
  onAffinity?(ev: AffinityEvent): void;
}

/** Session affinity: off unless a TTL is configured. */
export interface SessionAffinityConfig {
  ttlSecs: number;
  mode: AffinityMode;
  /** Bindings per partition table (default 65,536). */
  maxEntries?: number;
}

/** Pending-selection cache limits (CLI `--selection-cache-*`). */
export interface SelectionCacheConfig { ttlSecs: number; maxEntries: number; maxBytes: number }

/** Capacity limits of a core (CLI `--max-*`, README "Limits"); defaults in `LIMITS.default*`. */
export interface CoreLimits {
  /** Blocks one prompt may have (its complete blocks, or its hash-list length); a 422 above. */
  maxPromptBlocks: number;
  /** Live bookings, mirrored ones and in-flight claims included, across partitions; a 429 at the cap. */
  maxBookings: number;
  /** Partitions that may exist at once (each holds one or two wasm indexes); a 429 at the cap. */
  maxPartitions: number;
}

/** Decides whether the service may connect to an endpoint (`--allowed-endpoints`): null = allowed, else why not. */
export type EndpointPolicy = (endpoint: string) => string | null;

/** Options of a local core. */
export interface CoreOptions {
  clock?: Clock;
  rng?: Rng;
  selectionCache?: Partial<SelectionCacheConfig>;
  /** Raw 32-byte key for `keyed-xxh3-v1` (the Node side reads `router_tracking_key_file`). */
  trackingKey?: Uint8Array;
  /** Custom policy types, chosen by `DYN_ROUTER_WORKER_SELECTION_POLICY`. */
  policies?: PolicyRegistry;
  /** Policy instance parameters, when the policy is chosen by name. */
  policyParameters?: Readonly<Record<string, unknown>>;
  /** The parsed `DYN_ROUTER_POLICY_CONFIG` document (policy classes, worker_selection). */
  policyConfig?: RouterPolicyConfig | null;
  feed?: IndexFeed;
  hooks?: CoreHooks;
  /** Session affinity tables; null/absent = off. TTL 1 .. 31,536,000 s. */
  sessionAffinity?: SessionAffinityConfig | null;
  /** This replica's random non-zero id (`router_id` / affinity `writer_id`); default random. */
  replicaId?: bigint;
  /** First affinity version sequence; default wall-clock nanoseconds. */
  affinitySequenceStart?: bigint;
  /** Capacity limits; absent fields take their defaults. */
  limits?: Partial<CoreLimits>;
  /** Outbound endpoints a worker record may name (KV events, replay); absent = every endpoint. */
  endpointPolicy?: EndpointPolicy;
}
