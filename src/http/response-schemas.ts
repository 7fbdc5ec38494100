/**
 * zod descriptions of the response bodies (api §2, §3.1), used only to generate the OpenAPI
 * document. A compile-time check below ties each one to its TypeScript type in core/types.ts,
 * so the document cannot drift from what the service returns. `z.bigint()` marks a u64 (an i64
 * for response `sequence_hashes`); openapi.ts writes those as exact integers.
 */
import { z } from 'zod';
import type {
  ModelLoadResponse, OverlapScoresResponse, PotentialLoad, ReadyResponse, ReservationResponse, SelectResponse, StatusOk,
  WorkerRecord,
} from '../core/wire/types.js';
import { KV_FEED_STATES, type KvFeedState } from '../core/index/feed.js';

const int = () => z.number().int().min(0);
const rankMap = () => z.record(z.string(), z.string());

/** Every error body (api §1). */
export const ErrorSchema = z.object({
  error: z.string(),
  details: z.record(z.string(), z.unknown()).optional().describe('queue rejections: {policy_class, limit_kind, current, limit}'),
});

export const StatusOkSchema = z.object({ status: z.literal('ok') });

/** One rank's KV-event feed in a worker record (`kv_events`). */
export const KvFeedStatusSchema = z.object({
  dp_rank: int(),
  endpoint: z.string(),
  state: z.enum(KV_FEED_STATES as [KvFeedState, ...KvFeedState[]]),
  last_event_age_secs: z.number().nullable().describe('seconds since the last batch; null before the first'),
  batches: int(),
  blocks_stored: int(),
  blocks_removed: int(),
  dropped: int().describe('messages and batches dropped before anything was applied'),
  gaps: int(),
  block_size_mismatches: int(),
  reason: z.string().optional().describe('why the feed is in error (or last failed while disconnected)'),
});

export const WorkerRecordSchema = z.object({
  worker_id: z.bigint(),
  model_name: z.string(),
  routing_group: z.string(),
  endpoint: z.string().nullable(),
  kv_events_endpoint: z.string().nullable(),
  kv_events_endpoints: rankMap(),
  replay_endpoint: z.string().nullable(),
  block_size: int().nullable(),
  data_parallel_start_rank: int().nullable(),
  data_parallel_size: int().nullable(),
  max_num_batched_tokens: int().nullable(),
  total_kv_blocks: int().nullable(),
  stable_routing_id: z.string().nullable(),
  is_eagle: z.boolean().nullable(),
  taints: z.array(z.string()),
  topology_domains: z.record(z.string(), z.string()),
  kv_transfer_domain: z.string().nullable(),
  kv_transfer_enforcement: z.enum(['required', 'preferred']).nullable(),
  kv_transfer_preferred_weight: z.number().nullable(),
  router_hint_worker_type: z.string().optional(),
  router_hint_source_control_endpoints: rankMap().optional(),
  kv_event_source_mode: z.string().optional(),
  lifecycle: z.enum(['incomplete', 'schedulable', 'draining', 'unschedulable']),
  not_schedulable_reasons: z.array(z.string()).optional(),
  kv_events: z.array(KvFeedStatusSchema).optional().describe('per-rank KV-event feed health; only while the service is fed by KV events'),
});

export const ReadyResponseSchema = z.object({
  ready: z.boolean(), schedulable_workers: int(), workers: z.array(WorkerRecordSchema),
  kv_feeds: z.record(z.enum(KV_FEED_STATES as [KvFeedState, ...KvFeedState[]]), int()).optional()
    .describe('ranks per KV-feed state; only while the service is fed by KV events'),
});

const OverlapSummarySchema = z.object({
  longest_matched: int(), gpu: int(), dp: z.record(z.string(), int()), cpu: int(), disk: int(),
}).describe('matched tokens: gpu = device tier, cpu = device+host, disk = device+host+disk; dp = device tokens per rank');

export const SelectResponseSchema = z.object({
  selection_id: z.string().optional(),
  sequence_hashes: z.array(z.bigint()).optional().describe('only /select_and_reserve: booked tracking hashes, as i64'),
  isl_tokens: int().optional().describe('only /select_and_reserve'),
  track_prefill_tokens: z.boolean().optional().describe('only /select_and_reserve'),
  model_name: z.string(),
  routing_group: z.string(),
  worker_id: z.bigint(),
  dp_rank: int(),
  endpoint: z.string(),
  block_size: int(),
  overlap: OverlapSummarySchema,
  effective_prefill_tokens: int(),
  potential_decode_blocks: int(),
  decode_busy: z.boolean().optional(),
  worker_load: z.object({
    active_prefill_tokens: int(), prefill_token_capacity: int().nullable(), total_kv_blocks: int().optional(), prefill_busy: z.boolean().optional(),
  }).optional().describe('only advisory /select'),
  kv_hint: z.unknown().optional().describe('only bookings, when another worker can serve the prefix (api §9)'),
});

export const ReservationResponseSchema = z.object({
  selection_id: z.string(), model_name: z.string(), routing_group: z.string(), worker_id: z.bigint(), dp_rank: int(), endpoint: z.string(),
});

export const PotentialLoadSchema = z.object({
  worker_id: z.bigint(), dp_rank: int(), potential_prefill_tokens: int(), potential_decode_blocks: int(), active_requests: int(),
});

export const ModelLoadResponseSchema = z.object({
  model_name: z.string(), routing_group: z.string(), loads: z.array(PotentialLoadSchema), pending_count: int(), pending_isl_tokens: int(),
});

export const OverlapScoresResponseSchema = z.object({
  block_size: int(),
  num_blocks: int(),
  workers: z.array(z.object({
    worker_id: z.bigint(), dp_rank: int(), device_blocks: int(), host_pinned_blocks: int(), disk_blocks: int(),
    host_pinned_extension_blocks: int(), disk_extension_blocks: int(), shared_beyond_device_blocks: int().nullable(),
    router_credit_blocks: z.number(),
  })),
  shared_cache: z.object({
    enabled: z.boolean(), total_hit_blocks: int(), ranges: z.array(z.tuple([int(), int()])), error: z.string().nullable(),
  }),
});

export const DumpResponseSchema = z.record(z.string(), z.unknown())
  .describe('"model:group" -> {block_size, events: RouterEvent[]} (or {error}); hashes are u64');

export const MetricsResponseSchema = z.string()
  .describe('Prometheus text exposition format 0.0.4 (content-type text/plain; version=0.0.4; charset=utf-8)');

export const PeersResponseSchema = z.array(z.string()).describe('sorted ZMQ endpoints; [] when replica sync is disabled');

// ---- compile-time proof: each schema describes exactly its response type ------------------------
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _same: [
  Same<z.output<typeof WorkerRecordSchema>, WorkerRecord>, Same<z.output<typeof ReadyResponseSchema>, ReadyResponse>,
  Same<Omit<z.output<typeof SelectResponseSchema>, 'kv_hint'>, Omit<SelectResponse, 'kv_hint'>>,
  Same<z.output<typeof ReservationResponseSchema>, ReservationResponse>, Same<z.output<typeof PotentialLoadSchema>, PotentialLoad>,
  Same<z.output<typeof ModelLoadResponseSchema>, ModelLoadResponse>, Same<z.output<typeof OverlapScoresResponseSchema>, OverlapScoresResponse>,
  Same<z.output<typeof StatusOkSchema>, StatusOk>,
] = [true, true, true, true, true, true, true, true];
void _same;
