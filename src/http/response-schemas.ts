/**
 * zod descriptions of the response bodies, used only to generate the OpenAPI document. A
 * compile-time check below ties each one to its TypeScript type in core/wire/types.ts, and the
 * HTTP tests validate every response they receive against the document, so it cannot drift from
 * what the service returns. `z.bigint()` marks a u64 (an i64 for response `sequence_hashes`);
 * openapi.ts writes those as exact integers. Objects are closed (zod's output schemas say
 * `additionalProperties: false`): a field the service starts sending must be documented here.
 */
import * as z from 'zod';
import { TIER_NAMES } from '../core/index/index-types.js';
import { WorkerRequestSchema } from '../core/wire/schemas.js';
import type { RouterEvent } from '../core/index/kv-index.js';
import type { QueueRejectionDetails } from '../core/errors.js';
import type {
  DumpResponse, KvHint, ModelLoadResponse, OverlapScoresResponse, OverlapSummary, PotentialLoad, ReadyResponse, ReservationResponse,
  SelectResponse, StatusOk, WorkerLoad, WorkerRecord,
} from '../core/wire/types.js';
import { KV_FEED_STATES, type KvFeedState } from '../core/index/feed.js';

const int = () => z.number().int().min(0);
const rankMap = () => z.record(z.string(), z.string());

/** Every error body: one human-readable message. */
export const ErrorSchema = z.object({ error: z.string() }).describe('An error: the message says what was wrong');

export const QueueRejectionDetailsSchema = z.object({
  policy_class: z.string(), limit_kind: z.enum(['requests', 'raw_isl_tokens', 'cached_tokens']), current: int(), limit: int(),
}).describe('Which queue limit rejected the request');

/** A 429: the error plus the queue limit that was hit. */
export const QueueRejectionSchema = z.object({ error: z.string(), details: QueueRejectionDetailsSchema })
  .describe('A queue limit rejected the request (429)');

export const LimitRejectionDetailsSchema = z.object({
  limit_kind: z.enum(['bookings', 'partitions']), current: int(), limit: int(),
}).describe('Which capacity limit rejected the request (--max-bookings, --max-partitions)');

/** A 429 of a capacity limit: the error plus the limit that was hit. */
export const LimitRejectionSchema = z.object({ error: z.string(), details: LimitRejectionDetailsSchema })
  .describe('A capacity limit rejected the request (429)');

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
  kv_events_endpoints: rankMap().optional(),
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
  max_num_seqs: int().optional(),
  router_hint_source_control_endpoints: rankMap().optional(),
  kv_event_source_mode: z.string().optional(),
  lifecycle: z.enum(['incomplete', 'schedulable', 'draining', 'unschedulable']),
  not_schedulable_reasons: z.array(z.string()).optional(),
  kv_events: z.array(KvFeedStatusSchema).optional().describe('per-rank KV-event feed health; only while the service is fed by KV events'),
});

export const ReadyResponseSchema = z.object({
  ready: z.boolean(), schedulable_workers: int(), workers: z.array(WorkerRecordSchema),
  kv_feeds: z.object(Object.fromEntries(KV_FEED_STATES.map((st) => [st, int()])) as Record<KvFeedState, ReturnType<typeof int>>).optional()
    .describe('ranks per KV-feed state; only while the service is fed by KV events'),
  replica_sync: z.object({ meshed: z.boolean(), waiting: z.array(z.string()) }).optional()
    .describe('with replica sync: false until every peer is connected both ways and the first digest exchange is done (then ready is false too), with what is awaited per peer'),
});

export const OverlapSummarySchema = z.object({
  longest_matched: int(), gpu: int(), dp: z.record(z.string(), int()), cpu: int(), disk: int(),
}).describe('matched tokens: gpu = device tier, cpu = device+host, disk = device+host+disk; dp = device tokens per rank');

export const WorkerLoadSchema = z.object({
  active_prefill_tokens: int(), prefill_token_capacity: int(), total_kv_blocks: int().optional(), prefill_busy: z.boolean().optional(),
}).describe('the chosen worker\'s current load (advisory /select only)');

export const KvHintSchema = z.object({
  protocol_version: z.literal('0.1'),
  message_id: z.string().describe('the selection_id of the booking'),
  actions: z.array(z.object({
    action_id: z.string(), action_type: z.literal('kv.fetch'), action_version: z.literal('1.0'),
    payload: z.object({
      source_control_endpoint: z.string().describe('where the booked worker can fetch the KV blocks from'),
      block_hashes: z.array(z.bigint()).describe('the engine block hashes of the prefix to fetch, root first'),
    }),
  })),
}).describe('Tells the booked worker that another worker holds a longer prefix of the prompt');

// The fields every selection has, in the wire order (after selection_id and the booking fields).
const selection = {
  model_name: z.string(),
  routing_group: z.string(),
  worker_id: z.bigint(),
  dp_rank: int(),
  endpoint: z.string(),
  block_size: int(),
  overlap: OverlapSummarySchema,
  effective_prefill_tokens: int(),
  potential_decode_blocks: int(),
  decode_busy: z.boolean().optional().describe('only with a decode busy threshold and the worker\'s total_kv_blocks'),
};

/** `POST /select`: books nothing. */
export const SelectResponseSchema = z.object({
  selection_id: z.string().optional().describe('echoed when the request had one'),
  ...selection,
  worker_load: WorkerLoadSchema.optional(),
}).describe('The chosen worker (nothing booked)');

/** `POST /select_and_reserve`: a selection and its booking. */
export const BookingResponseSchema = z.object({
  selection_id: z.string().describe('the request\'s id, or a generated UUID'),
  sequence_hashes: z.array(z.bigint()).describe('the booked tracking hashes, as i64'),
  isl_tokens: int(),
  track_prefill_tokens: z.boolean(),
  ...selection,
  kv_hint: KvHintSchema.optional().describe('only when another worker of the same hint type holds a longer prefix'),
}).describe('The chosen worker, booked');

export const ReservationResponseSchema = z.object({
  selection_id: z.string(), model_name: z.string(), routing_group: z.string(), worker_id: z.bigint(), dp_rank: int(), endpoint: z.string(),
});

export const PotentialLoadSchema = z.object({
  worker_id: z.bigint(), dp_rank: int(), potential_prefill_tokens: int(), potential_decode_blocks: int(), active_requests: int(),
});

export const ModelLoadResponseSchema = z.object({
  model_name: z.string(), routing_group: z.string(), loads: z.array(PotentialLoadSchema), pending_count: int(), pending_isl_tokens: int(),
});

export const OverlapScoreRowSchema = z.object({
  worker_id: z.bigint(), dp_rank: int(), device_blocks: int(), host_pinned_blocks: int(), disk_blocks: int(),
  host_pinned_extension_blocks: int(), disk_extension_blocks: int(), shared_beyond_device_blocks: int().nullable(),
  router_credit_blocks: z.number(),
}).describe('Cached blocks of the prompt on one worker rank, per tier');

export const OverlapScoresResponseSchema = z.object({
  block_size: int(),
  num_blocks: int(),
  workers: z.array(OverlapScoreRowSchema),
  shared_cache: z.object({
    enabled: z.boolean(), total_hit_blocks: int(), ranges: z.array(z.tuple([int(), int()])), error: z.string().nullable(),
  }),
});

const u64List = () => z.array(z.bigint());

export const RouterEventSchema = z.object({
  worker_id: z.bigint(),
  storage_tier: z.enum(TIER_NAMES),
  event: z.object({
    event_id: int(),
    dp_rank: int(),
    data: z.union([
      z.object({ stored: z.object({
        parent_hash: z.bigint().nullable(), start_position: int().nullable(),
        blocks: z.array(z.object({ block_hash: z.bigint(), tokens_hash: z.bigint(), mm_extra_info: z.null() })),
      }) }),
      z.object({ removed: z.object({ block_hashes: u64List() }) }),
      z.literal('cleared'),
    ]),
  }),
}).describe('One cache event of a worker rank (hashes are u64)');

export const DumpPartitionSchema = z.union([
  z.object({ block_size: int(), events: z.array(RouterEventSchema) }),
  z.object({ error: z.string() }).describe('the partition could not be dumped'),
]);

export const DumpResponseSchema = z.record(z.string(), DumpPartitionSchema)
  .describe('The index per "model_name:routing_group" partition, as the events that rebuild it');

// The patch schema reads every field as unknown (null = unchanged) before validating the present
// ones; the document shows what those fields accept instead.
export const WorkerPatchDocSchema = WorkerRequestSchema.omit({ worker_id: true, model_name: true, routing_group: true }).partial()
  .describe('The fields to change; absent or null = unchanged');

export const MetricsResponseSchema = z.string()
  .describe('Prometheus text exposition format 0.0.4 (content-type text/plain; version=0.0.4; charset=utf-8)');

export const PeersResponseSchema = z.array(z.string()).describe('sorted ZMQ endpoints; [] when replica sync is disabled');

// ---- compile-time proof: each schema describes exactly its response type ------------------------
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Selections = z.output<typeof SelectResponseSchema> | z.output<typeof BookingResponseSchema>;
const _same: [
  Same<z.output<typeof WorkerRecordSchema>, WorkerRecord>, Same<z.output<typeof ReadyResponseSchema>, ReadyResponse>,
  // both selection bodies are SelectResponses, and together they use every field of it
  Selections extends SelectResponse ? true : false, Same<keyof SelectResponse, keyof z.output<typeof SelectResponseSchema> | keyof z.output<typeof BookingResponseSchema>>,
  Same<z.output<typeof OverlapSummarySchema>, OverlapSummary>, Same<z.output<typeof WorkerLoadSchema>, WorkerLoad>,
  Same<z.output<typeof KvHintSchema>, KvHint>,
  Same<z.output<typeof ReservationResponseSchema>, ReservationResponse>, Same<z.output<typeof PotentialLoadSchema>, PotentialLoad>,
  Same<z.output<typeof ModelLoadResponseSchema>, ModelLoadResponse>, Same<z.output<typeof OverlapScoresResponseSchema>, OverlapScoresResponse>,
  Same<z.output<typeof StatusOkSchema>, StatusOk>, Same<z.output<typeof RouterEventSchema>, RouterEvent>,
  Same<z.output<typeof DumpResponseSchema>, DumpResponse>, Same<z.output<typeof QueueRejectionDetailsSchema>, QueueRejectionDetails>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];
void _same;
