/**
 * Response shapes of the selection API (Dynamo `lib/kv-router/src/services/selection/server.rs`, `lib/kv-router/src/services/selection/types.rs`), the injected clock and RNG, and the
 * {@link SelectionApi} surface that SelectionCore, SelectionService and the HTTP layer share.
 * Field names are the wire names (snake_case); u64 values are `bigint` and i64 outputs
 * (`sequence_hashes`) are `bigint` already cast to the signed range.
 */
import type {
  FilterQuery, OutputBlockRequest, PromptQueryInput, ReservationRequestInput, SelectAndReserveRequestInput,
  SelectRequestInput, WorkerPatchInput, WorkerRequestInput,
} from './schemas.js';
import type { RouterEvent } from '../index/kv-index.js';
import type { KvFeedState, KvFeedStatus } from '../index/feed.js';

export type Lifecycle = 'incomplete' | 'schedulable' | 'draining' | 'unschedulable';

/** `WorkerCatalogRecord` (Dynamo `lib/kv-router/src/services/selection/types.rs`). Optional fields serialize as null; see `omitted` notes. */
export interface WorkerRecord {
  worker_id: bigint;
  model_name: string;
  routing_group: string;
  endpoint: string | null;
  kv_events_endpoint: string | null;
  /** omitted when empty (Dynamo's newest `types.rs`) */
  kv_events_endpoints?: Record<string, string>;
  replay_endpoint: string | null;
  block_size: number | null;
  data_parallel_start_rank: number | null;
  data_parallel_size: number | null;
  max_num_batched_tokens: number | null;
  total_kv_blocks: number | null;
  stable_routing_id: string | null;
  is_eagle: boolean | null;
  taints: string[];
  topology_domains: Record<string, string>;
  kv_transfer_domain: string | null;
  kv_transfer_enforcement: 'required' | 'preferred' | null;
  kv_transfer_preferred_weight: number | null;
  /** omitted when null */
  router_hint_worker_type?: string;
  /** The engine's `max_num_seqs` (running requests at most), when registered (this service's addition). */
  max_num_seqs?: number;
  /** omitted when empty */
  router_hint_source_control_endpoints?: Record<string, string>;
  /** omitted when null */
  kv_event_source_mode?: string;
  lifecycle: Lifecycle;
  /** omitted when empty */
  not_schedulable_reasons?: string[];
  /** The KV-event feed of each rank; present only while the service is fed by KV events (not in Dynamo). */
  kv_events?: KvFeedStatus[];
}

export interface ReadyResponse {
  ready: boolean;
  schedulable_workers: number;
  workers: WorkerRecord[];
  /** Ranks per KV-feed state over every worker; present only while the service is fed by KV events (not in Dynamo). */
  kv_feeds?: Record<KvFeedState, number>;
  /**
   * The replica mesh after start-up (present only with replica sync; not in Dynamo): `meshed`
   * false keeps `ready` false, with one line per peer saying what is awaited.
   */
  replica_sync?: { meshed: boolean; waiting: string[] };
}

export interface OverlapSummary { longest_matched: number; gpu: number; dp: Record<string, number>; cpu: number; disk: number }

export interface WorkerLoad {
  active_prefill_tokens: number;
  /** the worker's `max_num_batched_tokens`, else Dynamo's default capacity (10,000,000) */
  prefill_token_capacity: number;
  total_kv_blocks?: number;
  prefill_busy?: boolean;
}

/** A kv_hint envelope (u64 block hashes stay bigint): where the booked worker can fetch a longer cached prefix. */
export interface KvHint {
  protocol_version: '0.1';
  message_id: string;
  actions: { action_id: string; action_type: 'kv.fetch'; action_version: '1.0'; payload: { source_control_endpoint: string; block_hashes: bigint[] } }[];
}

/** `SelectResponse` (Dynamo `lib/kv-router/src/services/selection/core/run.rs`): fields marked optional are present only where the spec says. */
export interface SelectResponse {
  selection_id?: string;
  sequence_hashes?: bigint[];
  isl_tokens?: number;
  track_prefill_tokens?: boolean;
  model_name: string;
  routing_group: string;
  worker_id: bigint;
  dp_rank: number;
  endpoint: string;
  block_size: number;
  overlap: OverlapSummary;
  effective_prefill_tokens: number;
  potential_decode_blocks: number;
  decode_busy?: boolean;
  worker_load?: WorkerLoad;
  kv_hint?: KvHint;
}

export interface ReservationResponse {
  selection_id: string; model_name: string; routing_group: string; worker_id: bigint; dp_rank: number; endpoint: string;
}

export interface PotentialLoad {
  worker_id: bigint; dp_rank: number; potential_prefill_tokens: number; potential_decode_blocks: number; active_requests: number;
}

export interface ModelLoadResponse {
  model_name: string; routing_group: string; loads: PotentialLoad[]; pending_count: number; pending_isl_tokens: number;
}

export interface OverlapScoreRow {
  worker_id: bigint; dp_rank: number; device_blocks: number; host_pinned_blocks: number; disk_blocks: number;
  host_pinned_extension_blocks: number; disk_extension_blocks: number; shared_beyond_device_blocks: number | null;
  router_credit_blocks: number;
}

export interface OverlapScoresResponse {
  block_size: number; num_blocks: number; workers: OverlapScoreRow[];
  shared_cache: { enabled: boolean; total_hit_blocks: number; ranges: [number, number][]; error: string | null };
}

/** `/dump` (Dynamo `lib/kv-router/src/services/indexer/server.rs`): `"model:group"` -> events, or `{error}` for a partition whose dump failed. */
export type DumpResponse = Record<string, { block_size: number; events: RouterEvent[] } | { error: string }>;

export interface StatusOk { status: 'ok' }

/** Per-call options of the two select operations. */
export interface SelectOptions {
  /** `x-dynamo-meta-policy-class` (trimmed; empty ignored). */
  policyClass?: string;
  /** Aborts a queued selection (client went away): nothing stays booked. */
  signal?: AbortSignal;
}

/**
 * Every operation of the HTTP API as a method (Dynamo `lib/kv-router/src/services/selection/server.rs`). Inputs are the JSON shapes (validated
 * inside: a body that does not fit is a 422 SelectionError); failures throw SelectionError.
 */
export interface SelectionApi {
  upsertWorker(req: WorkerRequestInput): WorkerRecord;
  patchWorker(workerId: bigint, patch: WorkerPatchInput): WorkerRecord;
  deleteWorker(workerId: bigint): WorkerRecord;
  listWorkers(filter?: FilterQuery): WorkerRecord[];
  ready(): ReadyResponse;
  select(req: SelectRequestInput, opts?: SelectOptions): Promise<SelectResponse>;
  selectAndReserve(req: SelectAndReserveRequestInput, opts?: SelectOptions): Promise<SelectResponse>;
  createReservation(req: ReservationRequestInput): Promise<ReservationResponse>;
  prefillComplete(reservationId: string): StatusOk;
  addOutputBlock(reservationId: string, body: OutputBlockRequest | Record<string, unknown>): StatusOk;
  freeReservation(reservationId: string): StatusOk;
  loads(filter?: FilterQuery): ModelLoadResponse[];
  potentialLoads(req: PromptQueryInput): PotentialLoad[];
  overlapScores(req: PromptQueryInput): OverlapScoresResponse;
  dump(): DumpResponse;
}

/** The replica-sync peer routes (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`); implemented by the Node service. */
export interface ReplicaPeersApi {
  /** 201 when `created`, 200 when already present; 400 invalid endpoint; 409 replica sync disabled. */
  registerReplicaPeer(endpoint: string): { created: boolean };
  /** 404 `peer not found` when not registered; 400 / 409 as register. */
  deregisterReplicaPeer(endpoint: string): void;
  /** Sorted; [] when replica sync is disabled. */
  listReplicaPeers(): string[];
}

/** A metrics scrape: the Prometheus text exposition and its content type. */
export interface MetricsExposition { contentType: string; text: string }

/** What the HTTP layer serves: the selection API, the peer routes, metrics, readiness of shutdown. */
export interface ServiceApi extends SelectionApi, ReplicaPeersApi {
  readonly shuttingDown: boolean;
  shutdown(): Promise<void>;
  /** `GET /metrics`. */
  metrics(): Promise<MetricsExposition>;
  /**
   * Optional: a body field the route's request type does not have (ignored, as Dynamo does), for
   * a warning and a count. `route` is the route's path template (`/select`), `field` the name
   * (dotted inside a nested object: `session_context.sesion_id`), `known` the names of that object.
   */
  unknownField?(route: string, field: string, known: readonly string[]): void;
  /**
   * Optional: the server closed a connection whose client was still sending after an answer given
   * before its request was read, at the drain's byte or time limit (the client may not have read
   * the answer), for a count. The server logs it (rate-limited) itself.
   */
  drainCut?(limit: 'bytes' | 'time'): void;
}
