/**
 * The error catalogue (fastify `createError` style): every error the service returns has a stable
 * code here, with its HTTP status fixed per code (Dynamo `lib/kv-router/src/services/selection/error.rs`, newest `error.rs`) and the `kind`
 * string of Dynamo `lib/kv-router/src/services/selection/server.rs`. Factories build the exact message texts the spec quotes. The HTTP layer maps
 * a {@link SelectionError} to `status` + {@link errorBody} in one handler.
 *
 * Partitions are displayed as `partition "model/group"` ({@link partitionLabel}); Dynamo's exact
 * `RoutingPartitionId` Display is not pinned (Dynamo `lib/kv-router/src/services/selection/server.rs`). Worker ids are bigint, printed decimal.
 */

/** Error-kind strings of Dynamo `lib/kv-router/src/services/selection/server.rs` (`SelectionError::kind()`). */
export type ErrorKind = 'bad_request' | 'not_ready' | 'not_found' | 'conflict' | 'internal' | 'scheduler' | 'sequence';

/** One catalogue entry. */
export interface CatalogueEntry {
  readonly status: number;
  readonly kind: ErrorKind;
  /** When the error is raised (documentation; a test asserts it is present). */
  readonly description: string;
}

const e = (status: number, kind: ErrorKind, description: string): CatalogueEntry => ({ status, kind, description });

/** Every error code, frozen. */
export const ERROR_CATALOGUE = Object.freeze({
  // transport (Dynamo `lib/kv-router/src/services/selection/server.rs`): produced by the HTTP layer, listed here so one handler maps them
  SEL_ROUTE_NOT_FOUND: e(404, 'not_found', 'unknown route'),
  SEL_METHOD_NOT_ALLOWED: e(405, 'bad_request', 'known route, wrong method'),
  SEL_BODY_TOO_LARGE: e(413, 'bad_request', 'request body over the 8 MiB limit'),
  SEL_UNSUPPORTED_MEDIA_TYPE: e(415, 'bad_request', 'missing or wrong Content-Type for a JSON body'),
  SEL_INVALID_JSON: e(400, 'bad_request', 'syntactically invalid JSON body'),
  SEL_INVALID_PATH: e(400, 'bad_request', 'path parameter does not parse (worker_id must be u64)'),
  SEL_UNPROCESSABLE: e(422, 'bad_request', 'JSON that does not fit the request type (missing field, wrong type, bad router_config_override, a size over its limit)'),
  SEL_UNAUTHORIZED: e(401, 'bad_request', 'authentication is on and the request has no valid `Authorization: Bearer` token'),
  SEL_REQUEST_TIMEOUT: e(408, 'bad_request', 'the request was not received in full within --request-timeout-ms'),
  SEL_ENDPOINT_NOT_ALLOWED: e(422, 'bad_request', 'an endpoint the service would connect to is outside --allowed-endpoints'),
  // BadRequest
  SEL_BAD_REQUEST: e(400, 'bad_request', 'input validation (hash-path fields, effective_prefill_tokens, decay_fraction, ...)'),
  SEL_INVALID_ENDPOINT: e(400, 'bad_request', 'replica-sync peer endpoint is not a valid ZMQ endpoint'),
  SEL_AFFINITY_REJECTED: e(400, 'bad_request', 'session affinity InvalidArgument (session id too long, hard-mode dispatch away from a live binding)'),
  // NotReady
  SEL_NOT_READY: e(503, 'not_ready', 'no schedulable worker (anywhere, or in the partition)'),
  SEL_SHUTTING_DOWN: e(503, 'not_ready', 'mutation or selection after shutdown'),
  SEL_INDEXER_OFFLINE: e(503, 'not_ready', 'the KV indexer is offline'),
  SEL_PEER_MANAGER_UNAVAILABLE: e(503, 'not_ready', 'replica peer manager is gone'),
  // NotFound
  SEL_WORKER_NOT_FOUND: e(404, 'not_found', 'PATCH/DELETE of an unknown worker id'),
  SEL_RESERVATION_NOT_FOUND: e(404, 'not_found', 'lifecycle call on an unknown, in-flight or freed reservation'),
  SEL_PENDING_NOT_FOUND: e(404, 'not_found', 'replay /reservations without a cached selection'),
  SEL_SCHEDULABLE_WORKER_NOT_FOUND: e(404, 'not_found', 'explicit or replayed booking of a worker/rank not schedulable in the partition'),
  SEL_PEER_NOT_FOUND: e(404, 'not_found', 'deregister of a replica peer that is not registered'),
  // Conflict
  SEL_DUPLICATE_SELECTION: e(409, 'conflict', 'selection id already reserved or being reserved in any partition'),
  SEL_CONFLICT: e(409, 'conflict', 'partition block_size/is_eagle mismatch surfaced via API'),
  SEL_REPLICA_SYNC_DISABLED: e(409, 'conflict', 'replica-sync peer route without --replica-sync-port'),
  // Internal
  SEL_INTERNAL: e(500, 'internal', 'unexpected internal failure'),
  SEL_NO_LONGER_SCHEDULABLE: e(500, 'internal', 'worker drained or removed while the request was queued'),
  // Sequence (active-sequence tracker)
  SEL_SEQUENCE_DUPLICATE_REQUEST: e(409, 'sequence', 'tracker already holds the request id'),
  // Scheduler
  SEL_OVERLOADED: e(429, 'scheduler', 'all eligible workers (or the pinned worker) overloaded'),
  SEL_QUEUE_REJECTED: e(429, 'scheduler', 'policy-class queue limit reached; body carries details (429 = newest mapping, Dynamo `lib/kv-router/src/services/selection/error.rs`)'),
  SEL_BOOKING_LIMIT: e(429, 'scheduler', 'live bookings at --max-bookings; body carries details'),
  SEL_PARTITION_LIMIT: e(429, 'scheduler', 'a registration would create a partition beyond --max-partitions; body carries details'),
  SEL_NO_ENDPOINTS: e(503, 'scheduler', 'no eligible worker for the request'),
  SEL_ALL_FILTERED: e(503, 'scheduler', 'every candidate rejected by a worker filter'),
  SEL_SUBSCRIBER_SHUTDOWN: e(503, 'scheduler', 'scheduler shut down while the request was queued'),
  SEL_PINNED_NOT_ALLOWED: e(400, 'scheduler', 'pinned worker outside allowed_worker_ids'),
  SEL_POLICY_INTERNAL: e(500, 'scheduler', 'worker-selection policy error (non-finite cost, bad candidate row)'),
  SEL_CLASSIFIER_FAILED: e(500, 'scheduler', 'request-classifier plugin failure (sanitized body)'),
} satisfies Record<string, CatalogueEntry>);

/** A stable error code. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** Structured `details` of a queue rejection (Dynamo `lib/kv-router/src/services/selection/server.rs`). */
export interface QueueRejectionDetails {
  readonly policy_class: string;
  readonly limit_kind: 'requests' | 'raw_isl_tokens' | 'cached_tokens';
  readonly current: number;
  readonly limit: number;
}

/** An error with a catalogue code; `status` and `kind` come from the catalogue. */
export class SelectionError extends Error {
  override readonly name = 'SelectionError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly kind: ErrorKind;
  readonly details?: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details?: Readonly<Record<string, unknown>>, options?: { cause?: unknown }) {
    super(message, options);
    const entry = ERROR_CATALOGUE[code];
    if (entry === undefined) throw new TypeError(`unknown selection error code ${String(code)}`);
    this.code = code;
    this.status = entry.status;
    this.kind = entry.kind;
    if (details !== undefined) this.details = Object.freeze({ ...details });
  }
}

/** `partition "model/group"`: the one partition display used in every message. */
export function partitionLabel(model: string, group: string): string {
  return `partition "${model}/${group}"`;
}

/** A partition a request named that has no schedulable worker: what was asked and what exists (the 503's text). */
export interface PartitionLookup {
  readonly model: string;
  readonly group: string;
  /** `model_name` / `routing_group` absent from the request (so `"default"` was assumed). */
  readonly modelAssumed: boolean;
  readonly groupAssumed: boolean;
  /** A body field that is `model_name` spelt another way (e.g. `modelName`), when `model_name` is absent. */
  readonly lookalike?: string;
  /** Some worker of any partition is schedulable (Dynamo's text then names the partition). */
  readonly anySchedulable: boolean;
  /** The workers registered in this partition (none schedulable): how many, and the first few. */
  readonly here: { readonly count: number; readonly sample: readonly { workerId: bigint; lifecycle: string; reasons: readonly string[] }[] };
  /** The other routing groups the model has workers in, sorted. */
  readonly otherGroups: readonly string[];
  /** Every model with a registered worker, sorted. */
  readonly knownModels: readonly string[];
}

/** How a booking ended, remembered per id for a while so a later lifecycle call can say so. */
export type ReservationEnd =
  | { readonly kind: 'freed'; readonly byPeer: boolean }
  | { readonly kind: 'expired'; readonly afterSecs: number }
  | { readonly kind: 'worker'; readonly workerId: bigint; readonly dpRank: number;
      /** removed: DELETE /workers; rank: its dp_rank left the record; left: re-registered into another partition or as incomplete. */
      readonly change: 'removed' | 'rank' | 'left' };

/** Names listed in a message: the first few, each cut to a readable length, then `and N more`. */
function listed(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).map((n) => JSON.stringify(n.length > 64 ? `${n.slice(0, 63)}…` : n));
  return names.length > max ? `${shown.join(', ')} and ${names.length - max} more` : shown.join(', ');
}

function notReadyMessage(l: PartitionLookup): string {
  const why = [l.anySchedulable ? `no schedulable workers for ${partitionLabel(l.model, l.group)}` : 'no schedulable workers are available'];
  const assumed = ' was not given, so "default" was assumed';
  if (l.modelAssumed) why.push(`model_name${assumed}${l.lookalike ? ` (the body has ${JSON.stringify(l.lookalike)}: the field is model_name)` : ''}`);
  const m = JSON.stringify(l.model), g = JSON.stringify(l.group), { count, sample } = l.here;
  if (count > 0) {
    why.push(`model ${m} in routing group ${g} has ${count} worker(s) and none is schedulable: ${sample.map((w) =>
      `worker ${w.workerId} is ${w.lifecycle}${w.reasons.length > 0 ? ` (${w.reasons.join('; ')})` : ''}`).join(', ')}`
      + `${count > sample.length ? ` and ${count - sample.length} more` : ''}`);
  } else if (l.otherGroups.length > 0) {
    // a routing group left out is worth saying only where the model has workers in another one
    if (l.groupAssumed) why.push(`routing_group${assumed}`);
    why.push(`model ${m} has no worker in routing group ${g}, only in ${listed(l.otherGroups)}`);
  } else {
    why.push(l.knownModels.length > 0 ? `no worker is registered for model ${m}; known models: ${listed(l.knownModels)}`
      : 'no worker is registered (POST /workers registers one)');
  }
  return `${why[0]}: ${why.slice(1).join('; ')}`;
}

function reservationEndMessage(id: string, end: ReservationEnd): string {
  if (end.kind === 'freed') return `reservation ${id} was already freed${end.byPeer ? ' (by a replica peer)' : ''}`;
  if (end.kind === 'expired') return `reservation ${id} expired after ${end.afterSecs} s without being freed`;
  const w = `worker ${end.workerId}`;
  return `reservation ${id} was freed when ${end.change === 'removed' ? `its ${w} was removed`
    : end.change === 'rank' ? `dp_rank ${end.dpRank} of its ${w} was removed` : `its ${w} left the partition (re-registered)`}`;
}

/** HTTP error body: `{error}` plus `details` when present. */
export function errorBody(err: SelectionError): { error: string; details?: Readonly<Record<string, unknown>> } {
  return err.details === undefined ? { error: err.message } : { error: err.message, details: err.details };
}

/** Maps anything thrown to a {@link SelectionError}; unknown errors become `SEL_INTERNAL` (500). */
export function toSelectionError(err: unknown): SelectionError {
  if (err instanceof SelectionError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new SelectionError('SEL_INTERNAL', message || 'internal error', undefined, { cause: err });
}

// ---- factories: the spec's message texts -------------------------------------------------------

/** 404 `route not found`. */
export const routeNotFound = () => new SelectionError('SEL_ROUTE_NOT_FOUND', 'route not found');
/** 405 `method not allowed`. */
export const methodNotAllowed = () => new SelectionError('SEL_METHOD_NOT_ALLOWED', 'method not allowed');
/** 503 `selection service is shutting down`. */
export const shuttingDown = () => new SelectionError('SEL_SHUTTING_DOWN', 'selection service is shutting down');
/**
 * 503 for a request whose partition has no schedulable worker: Dynamo's text (`no schedulable
 * workers for partition "m/g"`, or `no schedulable workers are available` when no worker anywhere
 * is schedulable), then what was looked up and what exists ({@link PartitionLookup}).
 */
export const noSchedulableWorkersFor = (l: PartitionLookup) => new SelectionError('SEL_NOT_READY', notReadyMessage(l));
/** 404 `worker <id> not found`. */
export const workerNotFound = (workerId: bigint) => new SelectionError('SEL_WORKER_NOT_FOUND', `worker ${workerId} not found`);
/**
 * 404 for a lifecycle call on an id that has no live booking: `reservation <id> not found`, or,
 * while the index remembers how the id's booking ended, that (`was already freed`, `expired after
 * 300 s without being freed`, `was freed when its worker 7 was removed`).
 */
export const reservationNotFound = (id: string, end?: ReservationEnd) =>
  new SelectionError('SEL_RESERVATION_NOT_FOUND', end === undefined ? `reservation ${id} not found` : reservationEndMessage(id, end));
/** 409 `selection <id> is already reserved or being reserved`. */
export const duplicateSelection = (id: string) =>
  new SelectionError('SEL_DUPLICATE_SELECTION', `selection ${id} is already reserved or being reserved`);
/** 404 replay miss. */
export const pendingNotFound = (id: string, model: string, group: string) =>
  new SelectionError('SEL_PENDING_NOT_FOUND',
    `no pending selection ${id} for ${partitionLabel(model, group)} (expired, already used, or never selected)`);
/** 404 `schedulable worker W not found for …`, or with `(dp_rank R)` when a rank is given. */
export const schedulableWorkerNotFound = (workerId: bigint, model: string, group: string, dpRank?: number) =>
  new SelectionError('SEL_SCHEDULABLE_WORKER_NOT_FOUND',
    `schedulable worker ${workerId}${dpRank === undefined ? '' : ` (dp_rank ${dpRank})`} not found for ${partitionLabel(model, group)}`);
/** 400 `pinned worker N is not in allowed worker set`. */
export const pinnedNotAllowed = (workerId: bigint) =>
  new SelectionError('SEL_PINNED_NOT_ALLOWED', `pinned worker ${workerId} is not in allowed worker set`);
/** 400 `decay_fraction must be between 0.0 and 1.0`. */
export const decayFractionOutOfRange = () =>
  new SelectionError('SEL_BAD_REQUEST', 'decay_fraction must be between 0.0 and 1.0');
/** 409 `replica sync is disabled`. */
export const replicaSyncDisabled = () => new SelectionError('SEL_REPLICA_SYNC_DISABLED', 'replica sync is disabled');
/** 404 `peer not found`. */
export const peerNotFound = () => new SelectionError('SEL_PEER_NOT_FOUND', 'peer not found');
/** 503 `replica peer manager is unavailable`. */
export const peerManagerUnavailable = () =>
  new SelectionError('SEL_PEER_MANAGER_UNAVAILABLE', 'replica peer manager is unavailable');
/** 400 ``invalid ZMQ endpoint `<ep>`: <reason>`` (e.g. reason `missing scheme`). */
export const invalidZmqEndpoint = (endpoint: string, reason: string) =>
  new SelectionError('SEL_INVALID_ENDPOINT', `invalid ZMQ endpoint \`${endpoint}\`: ${reason}`);
/** 400 hash path (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const blockHashesRequired = () => new SelectionError('SEL_BAD_REQUEST', 'block_hashes is required without token_ids');
/** 400 hash path (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const sequenceHashesRequired = () => new SelectionError('SEL_BAD_REQUEST', 'sequence_hashes is required without token_ids');
/** 400 hash path (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const islTokensRequired = () => new SelectionError('SEL_BAD_REQUEST', 'isl_tokens is required without token_ids');
/** 400 hash path (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export const islTokensZero = () => new SelectionError('SEL_BAD_REQUEST', 'isl_tokens must be greater than 0');
/** 400 `block_hashes length A must match sequence_hashes length B`. */
export const hashLengthMismatch = (blocks: number, sequences: number) =>
  new SelectionError('SEL_BAD_REQUEST', `block_hashes length ${blocks} must match sequence_hashes length ${sequences}`);
/** 400 `effective_prefill_tokens N must not exceed isl_tokens M`. */
export const effectivePrefillExceedsIsl = (effective: number, isl: number) =>
  new SelectionError('SEL_BAD_REQUEST', `effective_prefill_tokens ${effective} must not exceed isl_tokens ${isl}`);
/** 400 session id over the byte limit (affinity InvalidArgument). */
export const sessionIdTooLong = (bytes: number, max: number) =>
  new SelectionError('SEL_AFFINITY_REJECTED', `session_id is ${bytes} bytes; the limit is ${max}`);
/** 429 queue rejection with `details {policy_class, limit_kind, current, limit}`. */
export const queueRejected = (d: QueueRejectionDetails) =>
  new SelectionError('SEL_QUEUE_REJECTED',
    `router policy class "${d.policy_class}" queue ${d.limit_kind} limit reached (current=${d.current}, limit=${d.limit})`,
    { policy_class: d.policy_class, limit_kind: d.limit_kind, current: d.current, limit: d.limit });
/** 429: the live-booking cap is reached (`details {limit_kind: "bookings", current, limit}`). */
export const bookingLimit = (current: number, limit: number) =>
  new SelectionError('SEL_BOOKING_LIMIT',
    `live booking limit reached (current=${current}, limit=${limit}): free reservations or raise --max-bookings`,
    { limit_kind: 'bookings', current, limit });
/** 429: no room for another partition (`details {limit_kind: "partitions", current, limit}`). */
export const partitionLimit = (model: string, group: string, current: number, limit: number) =>
  new SelectionError('SEL_PARTITION_LIMIT',
    `cannot create ${partitionLabel(model, group)}: partition limit reached (current=${current}, limit=${limit}); `
    + 'delete the workers of an unused partition or raise --max-partitions',
    { limit_kind: 'partitions', current, limit });
/** 503 no eligible worker for this request. */
export const noEndpoints = () => new SelectionError('SEL_NO_ENDPOINTS', 'no eligible workers for the request');
/** 503 a filter rejected every candidate. */
export const allFiltered = () => new SelectionError('SEL_ALL_FILTERED', 'all eligible workers were filtered out');
/** 503 scheduler shut down while queued. */
export const subscriberShutdown = () => new SelectionError('SEL_SUBSCRIBER_SHUTDOWN', 'scheduler is shutting down');
/** 500 a scorer produced a non-finite cost (text contains `non-finite`). */
export const policyNonFiniteCost = (workerId: bigint, dpRank: number, cost: number) =>
  new SelectionError('SEL_POLICY_INTERNAL',
    `worker selection policy produced a non-finite cost ${cost} for worker ${workerId} (dp_rank ${dpRank})`);
/** 500 a picker returned an out-of-range row (text contains `candidate row`). */
export const policyBadRow = (row: number, candidates: number) =>
  new SelectionError('SEL_POLICY_INTERNAL',
    `worker selection policy returned candidate row ${row}, but there are ${candidates} candidates`);
/** 500 `request classifier failed` (sanitized). */
export const classifierFailed = () => new SelectionError('SEL_CLASSIFIER_FAILED', 'request classifier failed');
/** 500 worker drained while the request was queued (text contains `no longer schedulable`). */
export const noLongerSchedulable = (workerId: bigint, dpRank: number, model: string, group: string) =>
  new SelectionError('SEL_NO_LONGER_SCHEDULABLE',
    `worker ${workerId} (dp_rank ${dpRank}) is no longer schedulable for ${partitionLabel(model, group)}`);
