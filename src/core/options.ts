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

/** The operations {@link CoreHooks.onSelection} reports, by HTTP route name. */
export type SelectionRoute = 'select' | 'select_and_reserve' | 'reservations';

/**
 * How a selection ended: `rejected` = the service declined for capacity or readiness (HTTP 429
 * or 503: queue limit, overloaded, no schedulable or eligible worker, shutting down); `error` =
 * anything else (invalid input, unknown ids, conflicts, internal failures).
 */
export type SelectionOutcome = 'ok' | 'rejected' | 'error';

/** One finished selection or booking (metrics). */
export interface SelectionEvent {
  route: SelectionRoute;
  /** The request's partition, or '' when it named none that exists (unbounded client strings stay out of labels). */
  modelName: string;
  routingGroup: string;
  outcome: SelectionOutcome;
  /** Time inside the core, queue wait included (a monotonic clock, not the injected one). */
  seconds: number;
  /**
   * Present for a booking of the router's own choice (`select_and_reserve`, and `reservations`
   * replaying a cached `/select`; not an explicit booking of a worker the client named): the
   * chosen rank's device-tier match (`overlap.gpu`) and the prompt length, in tokens.
   */
  booked?: { workerId: bigint; dpRank: number; deviceOverlapTokens: number; islTokens: number };
}

/** Host hooks. */
export interface CoreHooks {
  /** Called after a local admission, prefill completion (also repeated) and free. */
  onLifecycle?(ev: LifecycleEvent): void;
  /**
   * Called when a free (DELETE) names an id this core holds no booking for (nor an in-flight
   * claim): replica sync still tells the peers, which may hold it (it answers 404 here).
   */
  onUnknownFree?(requestId: string): void;
  /** Called when a session binding is committed, rebound or refreshed (affinity on). */
  onAffinity?(ev: AffinityEvent): void;
  /** Called when a select, select-and-reserve or reservation finishes, successfully or not. */
  onSelection?(ev: SelectionEvent): void;
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
