/**
 * Wire schemas (zod) of every request body of the selection API (Dynamo `lib/kv-router/src/services/selection/server.rs`, `lib/kv-router/src/services/selection/types.rs`), shared by the
 * core (embedded callers are validated too), the HTTP layer (422 on a schema failure) and the
 * OpenAPI document. Inputs are the values of the u64-exact JSON parser: integers beyond 2^53
 * arrive as `bigint`, smaller ones as `number`; both are accepted wherever an integer is.
 *
 * Conventions (serde parity, Dynamo `lib/kv-router/src/services/selection/server.rs`: unknown keys are ignored; JSON `null` means absent;
 * u64 ids become `bigint`; i64 hash arrays are bit-cast to u64 `bigint`.
 *
 * Every size a client controls is bounded (`LIMITS`, README "Limits"): strings, lists, maps,
 * data-parallel ranks and block size; a value over a limit is a 422 naming the field and the limit.
 * Isomorphic: no `node:` imports.
 */
import * as z from 'zod';
import { LIMITS, RouterConfigOverrideSchema } from '../config/config.js';
import { SelectionError } from '../errors.js';
import { show } from './show.js';

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
const U32_MAX = 0xffffffff;

/** u64 from a number or bigint integer, as bigint. */
export const u64 = () =>
  z.custom<bigint | number>((v) => (typeof v === 'bigint' ? v >= 0n && v <= U64_MAX : Number.isSafeInteger(v) && (v as number) >= 0),
    { error: (i) => `expected an unsigned 64-bit integer (got ${show(i.input)})` })
    .transform((v) => BigInt(v));

/** u32 as number. */
export const u32 = () =>
  z.custom<number>((v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= U32_MAX,
    { error: (i) => `expected an unsigned 32-bit integer (got ${show(i.input)})` });

/** A u32 no larger than `max` (a size-like field: data-parallel ranks, block size). */
const u32AtMost = (max: number) =>
  z.custom<number>((v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max, {
    error: (i) => (typeof i.input === 'number' && Number.isInteger(i.input) && i.input > max && i.input <= U32_MAX
      ? `must be at most ${max} (got ${i.input})` : `expected an unsigned 32-bit integer (got ${show(i.input)})`),
  });

/** A string of at most `LIMITS.maxStringChars` characters. */
const str = () => z.string().max(LIMITS.maxStringChars, { error: `longer than the limit of ${LIMITS.maxStringChars} characters` });

/** A list of at most `max` items (`what` names them in the message). */
const list = <T extends z.ZodType>(item: T, max: number, what: string) =>
  z.array(item).max(max, { error: `more than the limit of ${max} ${what}` });

/** A JSON object of at most `max` entries, string keys of bounded length. */
const boundedRecord = <V extends z.ZodType>(value: V, max: number, what: string) =>
  z.record(str(), value).refine((m) => Object.keys(m).length <= max, { error: `more than the limit of ${max} ${what}` });

/** An array input over `LIMITS.maxPromptItems` is refused before its items are looked at. */
const tooLong = (arr: unknown[], ctx: z.RefinementCtx, what: string): boolean => {
  if (arr.length <= LIMITS.maxPromptItems) return false;
  ctx.addIssue({ code: 'custom', message: `more than the limit of ${LIMITS.maxPromptItems} ${what}` });
  return true;
};

/** A non-negative integer that fits a JS number exactly (usize / u64 counts). */
export const count = () =>
  z.custom<number>((v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0,
    { error: (i) => `expected a non-negative integer (got ${show(i.input)})` });

/** Finite f64. */
const f64 = () => z.custom<number>((v) => typeof v === 'number' && Number.isFinite(v), { error: (i) => `expected a number (got ${show(i.input)})` });

/** `Option<T>` with serde semantics: absent or null -> undefined. */
const opt = <T extends z.ZodType>(s: T) =>
  s.nullish().transform((v) => (v == null ? undefined : v)) as unknown as z.ZodOptional<z.ZodType<z.output<T>, z.input<T> | null>>;

/**
 * An i64 hash array bit-cast to u64 (Dynamo `lib/kv-router/src/services/selection/server.rs`). One pass over the array (no per-element zod
 * schema: bodies carry thousands of hashes).
 */
export const i64HashArray = () =>
  z.custom<unknown[]>((v) => Array.isArray(v), { error: () => 'expected an array of 64-bit integers' })
    .transform((arr, ctx): bigint[] => {
      if (tooLong(arr, ctx, 'hashes')) return z.NEVER;
      const out = new Array<bigint>(arr.length);
      for (let i = 0; i < arr.length; i++) {
        const x = arr[i];
        let b: bigint;
        if (typeof x === 'number' && Number.isSafeInteger(x)) b = BigInt(x);
        else if (typeof x === 'bigint') b = x;
        else { ctx.addIssue({ code: 'custom', message: `expected a 64-bit integer (got ${show(x)})`, path: [i] }); return z.NEVER; }
        if (b < I64_MIN || b > U64_MAX) { ctx.addIssue({ code: 'custom', message: `out of the 64-bit range (got ${b})`, path: [i] }); return z.NEVER; }
        out[i] = b < 0n ? BigInt.asUintN(64, b) : b;
      }
      return out;
    });
void I64_MAX;

/** u32 token array, checked in one pass. */
export const tokenArray = () =>
  z.custom<unknown[]>((v) => Array.isArray(v), { error: () => 'expected an array of token ids' })
    .transform((arr, ctx): number[] => {
      if (tooLong(arr, ctx, 'token ids')) return z.NEVER;
      for (let i = 0; i < arr.length; i++) {
        const t = arr[i];
        // for a number, `t >>> 0 === t` holds exactly for the integers in [0, 2^32): two checks a
        // token instead of four (the typeof first: `>>>` would coerce an object or array)
        if (typeof t !== 'number' || t >>> 0 !== t) {
          ctx.addIssue({ code: 'custom', message: `expected a u32 token id (got ${show(t)})`, path: [i] });
          return z.NEVER;
        }
      }
      return arr as number[];
    });

/** A map keyed by a global dp rank (decimal string) to an endpoint string, one entry per rank at most. */
const rankMap = () =>
  z.record(z.string().regex(/^\d{1,10}$/, { error: 'keys must be dp ranks' }), str())
    .refine((m) => Object.keys(m).length <= LIMITS.maxDataParallelSize,
      { error: `more than the limit of ${LIMITS.maxDataParallelSize} ranks` }).nullish()
    .transform((m) => {
      const out = new Map<number, string>();
      if (m) for (const [k, v] of Object.entries(m)) {
        const r = Number(k);
        if (r <= U32_MAX) out.set(r, v);
      }
      return out;
    });

// ---- multimodal ---------------------------------------------------------------------------

export const MmObjectSchema = z.object({
  mm_hash: u64(),
  offsets: list(z.tuple([count(), count()]), LIMITS.maxMmObjectsPerBlock, 'offsets').nullish().transform((v) => v ?? []),
});
/** `BlockExtraInfo` (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const BlockExtraInfoSchema = z.object({
  mm_objects: list(MmObjectSchema, LIMITS.maxMmObjectsPerBlock, 'multimodal objects').nullish().transform((v) => v ?? []),
});
export type BlockExtraInfo = z.output<typeof BlockExtraInfoSchema>;
const blockMmInfos = () => list(BlockExtraInfoSchema.nullable(), LIMITS.maxPromptItems, 'blocks').nullish().transform((v) => v ?? undefined);

// ---- prompt -------------------------------------------------------------------------------

/** The flattened `PromptRequest` fields (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const promptShape = {
  token_ids: opt(tokenArray()),
  mm_routing_info: opt(z.object({ routing_token_ids: tokenArray(), block_mm_infos: blockMmInfos() })),
  block_mm_infos: blockMmInfos(),
  block_hashes: opt(i64HashArray()),
  sequence_hashes: opt(i64HashArray()),
  isl_tokens: opt(count()),
  lora_name: opt(str()),
  cache_salt: opt(str()),
  is_eagle: opt(z.boolean()),
};

const partitionShape = {
  model_name: str().nullish().transform((v) => v ?? 'default'),
  routing_group: str().nullish().transform((v) => v ?? 'default'),
};

const overrideField = RouterConfigOverrideSchema.nullish().transform((v) => v ?? undefined);

export const SessionContextSchema = z.object({
  session_id: str(),
  parent_session_id: opt(str()),
  session_final: opt(z.boolean()),
  input_trigger: opt(z.enum(['user_message', 'tool_result', 'other'])),
  /** Agent headers (name -> ordered values), passed to custom policies unchanged. */
  agent_headers: opt(boundedRecord(list(str(), LIMITS.maxMapEntries, 'values'), LIMITS.maxMapEntries, 'headers')),
});
export type SessionContext = z.output<typeof SessionContextSchema>;

export const WorkerTargetSchema = z.object({ worker_id: u64(), dp_rank: opt(u32()) });
export const PinnedWorkerSchema = z.object({ worker_id: u64(), dp_rank: u32() });

export const RoutingConstraintsSchema = z.object({
  required_taints: list(str(), LIMITS.maxTaints, 'taints').nullish().transform((v) => v ?? []),
  preferred_taints: boundedRecord(f64(), LIMITS.maxTaints, 'taints').nullish().transform((v) => v ?? {}),
}).nullish().transform((v) => v ?? { required_taints: [], preferred_taints: {} });

const selectShape = {
  ...partitionShape,
  selection_id: opt(str()),
  ...promptShape,
  router_config_override: overrideField,
  expected_output_tokens: opt(u32()),
  priority_jump: opt(f64()),
  strict_priority: opt(u32()),
  session_id: opt(str()),
  session_context: opt(SessionContextSchema),
  affinity_target: opt(WorkerTargetSchema),
  pinned_worker: opt(PinnedWorkerSchema),
  allowed_worker_ids: opt(list(u64(), LIMITS.maxAllowedWorkerIds, 'worker ids')),
  routing_constraints: RoutingConstraintsSchema,
};

/** `POST /select` (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const SelectRequestSchema = z.object({ ...selectShape, advisory: z.boolean().nullish().transform((v) => v ?? false) });
/** `POST /select_and_reserve` (Dynamo `lib/kv-router/src/services/selection/core/run.rs`): the select fields minus `advisory`. */
export const SelectAndReserveRequestSchema = z.object(selectShape);
export type SelectAndReserveRequest = z.output<typeof SelectAndReserveRequestSchema>;
export type SelectRequestInput = z.input<typeof SelectRequestSchema>;
export type SelectAndReserveRequestInput = z.input<typeof SelectAndReserveRequestSchema>;

/** `POST /reservations` (Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`). */
export const ReservationRequestSchema = z.object({
  ...partitionShape,
  selection_id: z.string({ error: (i) => (i.input === undefined ? 'missing field `selection_id`' : 'selection_id must be a string') })
    .max(LIMITS.maxStringChars, { error: `longer than the limit of ${LIMITS.maxStringChars} characters` }),
  worker_id: opt(u64()),
  dp_rank: opt(u32()),
  ...promptShape,
  router_config_override: overrideField,
  expected_output_tokens: opt(u32()),
  effective_prefill_tokens: opt(count()),
  track_prefill_tokens: opt(z.boolean()),
});
export type ReservationRequestInput = z.input<typeof ReservationRequestSchema>;

/** `POST /reservations/{id}/output_block` (Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`); range is checked by the core (400). */
export const OutputBlockRequestSchema = z.object({ decay_fraction: opt(f64()) });
export type OutputBlockRequest = z.output<typeof OutputBlockRequestSchema>;

/** `POST /potential_loads` and `POST /overlap_scores` (Dynamo `lib/kv-router/src/services/selection/core/queries.rs`). */
export const PromptQuerySchema = z.object({ ...partitionShape, ...promptShape, router_config_override: overrideField });
export type PromptQueryInput = z.input<typeof PromptQuerySchema>;

/** Replica-sync peer routes (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`). */
export const PeerRequestSchema = z.object({ endpoint: str() });

/** Query filter of GET /workers and GET /loads. */
export const FilterQuerySchema = z.object({ model_name: opt(str()), routing_group: opt(str()) });
export type FilterQuery = z.output<typeof FilterQuerySchema>;

// ---- workers ------------------------------------------------------------------------------

const workerFields = {
  endpoint: opt(str()),
  kv_events_endpoint: opt(str()),
  kv_events_endpoints: rankMap(),
  replay_endpoint: opt(str()),
  block_size: opt(u32AtMost(LIMITS.maxBlockSize)),
  data_parallel_start_rank: opt(u32AtMost(LIMITS.maxDataParallelStartRank)),
  data_parallel_size: opt(u32AtMost(LIMITS.maxDataParallelSize)),
  max_num_batched_tokens: opt(count()),
  max_num_seqs: opt(count()),
  total_kv_blocks: opt(count()),
  stable_routing_id: opt(str()),
  is_eagle: opt(z.boolean()),
  taints: list(str(), LIMITS.maxTaints, 'taints').nullish().transform((v) => v ?? []),
  topology_domains: boundedRecord(str(), LIMITS.maxMapEntries, 'entries').nullish().transform((v) => v ?? {}),
  kv_transfer_domain: opt(str()),
  kv_transfer_enforcement: opt(z.enum(['required', 'preferred'])),
  kv_transfer_preferred_weight: opt(f64()),
  router_hint_worker_type: opt(str()),
  router_hint_source_control_endpoints: rankMap(),
  kv_event_source_mode: opt(str()),
};

/** `POST /workers` (Dynamo `lib/kv-router/src/services/selection/types.rs`): only `worker_id` is required. */
export const WorkerRequestSchema = z.object({
  worker_id: z.custom<unknown>((v) => v !== undefined, { error: 'missing field `worker_id`' }).pipe(u64()),
  ...partitionShape,
  ...workerFields,
});
export type WorkerRequest = z.output<typeof WorkerRequestSchema>;
export type WorkerRequestInput = z.input<typeof WorkerRequestSchema>;

/**
 * `PATCH /workers/{id}` (Dynamo `lib/kv-router/src/services/selection/core/workers.rs`): every worker field optional; absent or null = unchanged.
 * Map/set fields replace wholesale when present.
 */
export const WorkerPatchSchema = z.object(Object.fromEntries(
  Object.keys(workerFields).map((k) => [k, z.unknown().optional()]),
) as Record<keyof typeof workerFields, z.ZodOptional<z.ZodUnknown>>).transform((raw, ctx) => {
  const present: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (v != null) present[k] = v;
  const parsed = z.object(workerFields).partial().safeParse(present);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  }
  // only the keys present (non-null) in the body
  const out: Partial<Record<keyof typeof workerFields, unknown>> = {};
  for (const k of Object.keys(present)) out[k as keyof typeof workerFields] = (parsed.data as Record<string, unknown>)[k];
  return out as Partial<Omit<WorkerRequest, 'worker_id' | 'model_name' | 'routing_group'>>;
});
export type WorkerPatch = z.output<typeof WorkerPatchSchema>;
export type WorkerPatchInput = z.input<typeof WorkerPatchSchema>;

/**
 * The first schema issue as one line naming the field, e.g.
 * `invalid request body: selection_id: missing field \`selection_id\``.
 */
export function describeIssues(err: z.ZodError): string {
  const parts = err.issues.slice(0, 3).map((i) => {
    const path = i.path.map(String).join('.');
    return path ? `${path}: ${i.message}` : i.message;
  });
  return `Failed to deserialize the JSON body into the target type: ${parts.join('; ')}`;
}

/** Validates a body with a schema; a misfit is the 422 `SEL_UNPROCESSABLE` naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new SelectionError('SEL_UNPROCESSABLE', describeIssues(r.error));
  return r.data;
}
