/**
 * What a host gives a SelectionCore and gets from it: options, hooks, the KV-event feed
 * interface, lifecycle and binding events for replica sync, and the queue's waiter contract.
 */
import type { ConfigError } from './config/config.js';
import type { RouterPolicyConfig } from './select/policy-config.js';
import type { PolicyRegistry } from './select/policy.js';
import type { AffinityMode } from './booking/affinity.js';
import type { Partition } from './catalog/partition.js';
import type { Clock, Rng } from './wire/types.js';
import type { SelectionCore } from './core.js';

/** A partition as the KV-event ingress sees it. */
export interface FeedPartition { modelName: string; routingGroup: string; blockSize: number; isEagle: boolean; index: Partition['index'] }

/**
 * Where KV events come from (the Node service's ZMQ ingress implements it). `reconcile` throws
 * (with nothing changed) when an endpoint is invalid; the worker is then `incomplete` with
 * `reconciliation failed: <message>`. A reconcile drops the blocks of ranks whose endpoint
 * changed or went away (only the feed knows); `detach` stops the listeners, and the core then
 * removes the worker's blocks itself.
 */
export interface IndexFeed {
  reconcile(partition: FeedPartition, workerId: bigint, ranks: ReadonlyMap<number, string>, replayEndpoint: string | null): void;
  detach(workerId: bigint): void;
}

/** A booking lifecycle event, for replica sync (api §6). */
export type LifecycleEvent = {
  modelName: string; routingGroup: string; blockSize: number; requestId: string; workerId: bigint; dpRank: number; loraName?: string;
} & (
  | { kind: 'add'; seq: BigUint64Array; trackPrefillTokens: boolean; expectedOutputTokens?: number; prefillTokens: number }
  | { kind: 'prefill_complete' }
  | { kind: 'free' }
);

/** A lifecycle event received from a replica peer (already decoded). */
export type ReplicaLifecycle = {
  modelName: string; routingGroup: string; blockSize: number; requestId: string; workerId: bigint; dpRank: number; loraName?: string;
} & (
  | { kind: 'add'; seq: readonly bigint[] | null; trackPrefillTokens: boolean; expectedOutputTokens?: number; prefillTokens: number }
  | { kind: 'prefill_complete' }
  | { kind: 'free' }
);

/** A session binding published by (or received from) a replica (api §6, §8). */
export interface AffinityEvent {
  modelName: string; routingGroup: string; sessionId: string; workerId: bigint; dpRank: number | null;
  sequence: bigint; writerId: bigint;
}

/** Host hooks. */
export interface CoreHooks {
  /** Called after a local admission, prefill completion (also repeated) and free. */
  onLifecycle?(ev: LifecycleEvent): void;
  /** Called when a session binding is committed, rebound or refreshed (affinity on). */
  onAffinity?(ev: AffinityEvent): void;
}

/** Session affinity (api §8): off unless a TTL is configured. */
export interface SessionAffinityConfig {
  ttlSecs: number;
  mode: AffinityMode;
  /** Bindings per partition table (default 65,536). */
  maxEntries?: number;
}

/** Pending-selection cache limits (api §5.2; CLI `--selection-cache-*`). */
export interface SelectionCacheConfig { ttlSecs: number; maxEntries: number; maxBytes: number }

/** Options of a local core. */
export interface CoreOptions {
  clock?: Clock;
  rng?: Rng;
  selectionCache?: Partial<SelectionCacheConfig>;
  /** Raw 32-byte key for `keyed-xxh3-v1` (the Node side reads `router_tracking_key_file`). */
  trackingKey?: Uint8Array;
  /** Custom policy types (api §10), chosen by `DYN_ROUTER_WORKER_SELECTION_POLICY`. */
  policies?: PolicyRegistry;
  /** Policy instance parameters, when the policy is chosen by name. */
  policyParameters?: Readonly<Record<string, unknown>>;
  /** The parsed `DYN_ROUTER_POLICY_CONFIG` document (policy classes, worker_selection). */
  policyConfig?: RouterPolicyConfig | null;
  feed?: IndexFeed;
  hooks?: CoreHooks;
  /** Session affinity tables (api §8); null/absent = off. TTL 1 .. 31,536,000 s. */
  sessionAffinity?: SessionAffinityConfig | null;
  /** This replica's random non-zero id (`router_id` / affinity `writer_id`); default random. */
  replicaId?: bigint;
  /** First affinity version sequence; default wall-clock nanoseconds (api §8). */
  affinitySequenceStart?: bigint;
}

/** `Result` of {@link SelectionCore.tryNewLocal}. */
export type CoreResult = { ok: true; core: SelectionCore } | { ok: false; error: ConfigError };

/** A request waiting in a partition's admission queue. */
export interface Waiter {
  canRun(): boolean;
  run(): void;
  fail(err: unknown): void;
}
