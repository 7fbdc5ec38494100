/**
 * Worker catalog records (Dynamo `lib/kv-router/src/services/selection/types.rs`): the stored record of a `WorkerRequest`, its DP ranks, the
 * event endpoint of each rank, and the schedulability reasons in the order of Dynamo's catalog (`lib/kv-router/src/services/selection/catalog.rs`) and
 * words. Pure functions; the core owns the map of records and the lifecycle transitions.
 */
import type { WorkerPatch, WorkerRequest } from '../wire/schemas.js';
import type { Lifecycle, WorkerRecord } from '../wire/types.js';
import { KV_FEED_STATES, type KvFeedState, type KvFeedStatus } from '../index/feed.js';

/** A stored worker: the normalised request plus lifecycle. */
export interface WorkerEntry {
  req: WorkerRequest;
  lifecycle: Lifecycle;
  reasons: string[];
  /** The partition key the worker is registered in (null while not attached). */
  partitionKey: string | null;
  /** Why the KV-event feed refused the worker's endpoints (its ranks' feeds are then `error`). */
  feedError?: string;
}

/** Context of the schedulability rules. */
export interface ReasonContext {
  /** Queueing on (router_queue_threshold or a queueing policy class). */
  queueing: boolean;
  /** The service listens for KV events (use_kv_events). */
  kvEvents: boolean;
}

/** First DP rank (default 0). */
export const startRank = (r: WorkerRequest): number => r.data_parallel_start_rank ?? 0;
/** DP size (default 1). */
export const dpSize = (r: WorkerRequest): number => r.data_parallel_size ?? 1;

/** The worker's global DP ranks `[start, start + size)`. */
export function ranksOf(r: WorkerRequest): number[] {
  const s = startRank(r), n = dpSize(r);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = s + i;
  return out;
}

/**
 * The KV-event endpoint of each rank: `kv_events_endpoints[rank]` wins; the scalar
 * `kv_events_endpoint` serves a single-rank worker without a map. Ranks without one are absent.
 */
export function eventEndpoints(r: WorkerRequest): Map<number, string> {
  const out = new Map<number, string>();
  const ranks = ranksOf(r);
  const map = r.kv_events_endpoints;
  for (const rank of ranks) {
    const e = map.get(rank);
    if (e) out.set(rank, e);
  }
  if (map.size === 0 && ranks.length === 1 && r.kv_events_endpoint) out.set(ranks[0], r.kv_events_endpoint);
  return out;
}

/** The metadata reasons of the schedulability rules (1-5), in order; empty = the worker may be schedulable. */
export function metadataReasons(r: WorkerRequest, ctx: ReasonContext): string[] {
  const out: string[] = [];
  if (!r.endpoint) out.push('endpoint is required');
  // Dynamo says `block_size must be greater than 0` for both; an absent field is named as such
  if (r.block_size === undefined) out.push('block_size is required');
  else if (!(r.block_size > 0)) out.push('block_size must be greater than 0');
  if (dpSize(r) <= 0) out.push('data_parallel_size must be greater than 0');
  if (ctx.queueing && r.max_num_batched_tokens === undefined) out.push('max_num_batched_tokens is required while queueing is enabled');
  if (ctx.kvEvents && dpSize(r) > 0) {
    const eps = eventEndpoints(r);
    for (const rank of ranksOf(r)) if (!eps.has(rank)) out.push(`kv_events endpoint is required for dp_rank ${rank}`);
    if (r.replay_endpoint && dpSize(r) !== 1) out.push('replay_endpoint is supported only for data_parallel_size 1');
  }
  return out;
}

/** Applies a PATCH: present fields replace (maps and sets wholesale); partition fields stay. */
export function applyPatch(r: WorkerRequest, patch: WorkerPatch): WorkerRequest {
  return { ...r, ...patch } as WorkerRequest;
}

/** The partition key of a request. */
export const partitionKeyOf = (model: string, group: string): string => `${model.length}:${model}|${group}`;

const mapToRecord = (m: ReadonlyMap<number, string>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const k of [...m.keys()].sort((a, b) => a - b)) out[String(k)] = m.get(k) as string;
  return out;
};

/**
 * The wire record (docs/api.md, Workers): optional fields as null, the omitted-when-empty ones omitted
 * (`kv_events_endpoints` too, as Dynamo's newest `types.rs` does); plus `kv_events` (the rank
 * feeds) when the service describes its KV-event feeds.
 */
export function toRecord(e: WorkerEntry, lifecycle: Lifecycle = e.lifecycle, kvEvents?: KvFeedStatus[]): WorkerRecord {
  const r = e.req;
  const rec: WorkerRecord = {
    worker_id: r.worker_id,
    model_name: r.model_name,
    routing_group: r.routing_group,
    endpoint: r.endpoint ?? null,
    kv_events_endpoint: r.kv_events_endpoint ?? null,
  } as WorkerRecord;
  if (r.kv_events_endpoints.size > 0) rec.kv_events_endpoints = mapToRecord(r.kv_events_endpoints);
  Object.assign(rec, {
    replay_endpoint: r.replay_endpoint ?? null,
    block_size: r.block_size ?? null,
    data_parallel_start_rank: r.data_parallel_start_rank ?? null,
    data_parallel_size: r.data_parallel_size ?? null,
    max_num_batched_tokens: r.max_num_batched_tokens ?? null,
    total_kv_blocks: r.total_kv_blocks ?? null,
    stable_routing_id: r.stable_routing_id ?? null,
    is_eagle: r.is_eagle ?? null,
    taints: [...r.taints],
    topology_domains: { ...r.topology_domains },
    kv_transfer_domain: r.kv_transfer_domain ?? null,
    kv_transfer_enforcement: r.kv_transfer_enforcement ?? null,
    kv_transfer_preferred_weight: r.kv_transfer_preferred_weight ?? null,
    lifecycle,
  });
  if (r.router_hint_worker_type != null) rec.router_hint_worker_type = r.router_hint_worker_type;
  if (r.max_num_seqs != null) rec.max_num_seqs = r.max_num_seqs;
  if (r.router_hint_source_control_endpoints.size > 0) rec.router_hint_source_control_endpoints = mapToRecord(r.router_hint_source_control_endpoints);
  if (r.kv_event_source_mode != null) rec.kv_event_source_mode = r.kv_event_source_mode;
  if (lifecycle !== 'unschedulable' && e.reasons.length > 0) rec.not_schedulable_reasons = [...e.reasons];
  if (kvEvents !== undefined) rec.kv_events = kvEvents;
  return rec;
}

/** The feeds of a worker whose endpoints the feed refused: every rank with an endpoint, in `error`. */
export function failedFeeds(r: WorkerRequest, reason: string): KvFeedStatus[] {
  return [...eventEndpoints(r)].sort((a, b) => a[0] - b[0]).map(([dpRank, endpoint]) => ({
    dp_rank: dpRank, endpoint, state: 'error', last_event_age_secs: null, batches: 0, blocks_stored: 0, blocks_removed: 0,
    dropped: 0, gaps: 0, block_size_mismatches: 0, reason,
  }));
}

/** Ranks per feed state over the records' `kv_events` (every state present, 0 when none). */
export function countFeedStates(records: readonly WorkerRecord[]): Record<KvFeedState, number> {
  const out = Object.fromEntries(KV_FEED_STATES.map((s) => [s, 0])) as Record<KvFeedState, number>;
  for (const r of records) for (const f of r.kv_events ?? []) out[f.state]++;
  return out;
}

/** Sort order of GET /workers: (model_name, routing_group, worker_id). */
export function compareRecords(a: WorkerRecord, b: WorkerRecord): number {
  if (a.model_name !== b.model_name) return a.model_name < b.model_name ? -1 : 1;
  if (a.routing_group !== b.routing_group) return a.routing_group < b.routing_group ? -1 : 1;
  return a.worker_id < b.worker_id ? -1 : a.worker_id > b.worker_id ? 1 : 0;
}
