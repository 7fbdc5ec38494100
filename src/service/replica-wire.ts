/**
 * Replica-sync wire format (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`), wire-compatible with Dynamo's `rmp_serde::to_vec_named`:
 * two frames `[topic, msgpack map with named fields]`; unit enum variants as the variant-name
 * string, data variants as a one-entry map, `None` as nil. u64 values stay exact (bigint).
 *
 * Topics: `dynamo.slot-tracker.v1` (lifecycle, the v1 envelope with exactly four keys:
 * model_name, routing_group, block_size, event) and `dynamo.session-affinity.v1` (bindings).
 * A legacy envelope with `tenant_id` (and no `routing_group`) is rejected.
 */
import { Packr, Unpackr } from 'msgpackr';
import { toU64 } from '../core/wire/json.js';
import type { AffinityEvent, LifecycleEvent } from '../core/wire/events.js';

export const LIFECYCLE_TOPIC = 'dynamo.slot-tracker.v1';
export const AFFINITY_TOPIC = 'dynamo.session-affinity.v1';

/** A lifecycle message: the event and the `router_id` of the replica that published it. */
export interface ReplicaEvent { routerId: bigint; event: LifecycleEvent }

const packr = new Packr({ useRecords: false, variableMapSize: true, largeBigIntToFloat: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });

const u64 = (v: unknown): bigint | null => toU64(v) ?? null;
const u32 = (v: unknown): number | null => {
  const n = typeof v === 'bigint' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 0xffffffff ? n : null;
};
const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/**
 * A u64 in its most compact msgpack form, as rmp-serde writes it: values that fit 32 bits as
 * numbers (msgpackr picks the smallest uint format), larger ones as uint64 (a bigint).
 */
const wire = (v: bigint): bigint | number => (v <= 0xffffffffn ? Number(v) : v);

/**
 * Encodes a lifecycle event (payload frame). An admission carries its prefill load as
 * `prefill_load_hint.initial_effective_prefill_tokens` only when prefill tokens are tracked.
 */
export function encodeReplicaEvent({ routerId, event: e }: ReplicaEvent): Buffer {
  let data: unknown;
  if (e.kind === 'add') {
    data = {
      AddRequest: {
        token_sequence: e.seq === null ? null : Array.from(e.seq, wire),
        track_prefill_tokens: e.trackPrefillTokens,
        expected_output_tokens: e.expectedOutputTokens,
        prefill_load_hint: e.trackPrefillTokens && e.prefillTokens > 0
          ? { initial_effective_prefill_tokens: e.prefillTokens, expected_prefill_duration: null } : null,
      },
    };
  } else data = e.kind === 'free' ? 'Free' : 'MarkPrefillCompleted';
  return packr.pack({
    model_name: e.modelName,
    routing_group: e.routingGroup,
    block_size: e.blockSize,
    event: {
      request_id: e.requestId,
      worker: { worker_id: wire(e.workerId), dp_rank: e.dpRank },
      data,
      router_id: wire(routerId),
      lora_name: e.loraName,
    },
  });
}

/** Decodes a lifecycle payload; throws on anything that is not a v1 envelope. */
export function decodeReplicaEvent(buf: Uint8Array): ReplicaEvent {
  const v: unknown = unpackr.unpack(buf);
  if (!isMap(v)) throw new Error('envelope is not a map');
  if (!('routing_group' in v) || 'tenant_id' in v) throw new Error('legacy or unknown envelope (no routing_group)');
  const { model_name, routing_group, block_size, event } = v;
  if (typeof model_name !== 'string' || typeof routing_group !== 'string') throw new Error('bad partition fields');
  const bs = u32(block_size);
  if (bs === null || !isMap(event)) throw new Error('bad block_size or event');
  const worker = event.worker;
  if (typeof event.request_id !== 'string' || !isMap(worker)) throw new Error('bad request_id or worker');
  const workerId = u64(worker.worker_id), dpRank = u32(worker.dp_rank), routerId = u64(event.router_id);
  if (workerId === null || dpRank === null || routerId === null) throw new Error('bad worker or router_id');
  const lora = event.lora_name;
  if (lora !== undefined && lora !== null && typeof lora !== 'string') throw new Error('bad lora_name');
  const ref = {
    modelName: model_name, routingGroup: routing_group, blockSize: bs, requestId: event.request_id,
    workerId, dpRank, loraName: typeof lora === 'string' ? lora : null,
  };
  const d = event.data;
  if (d === 'Free') return { routerId, event: { ...ref, kind: 'free' } };
  if (d === 'MarkPrefillCompleted') return { routerId, event: { ...ref, kind: 'prefill_complete' } };
  if (!isMap(d) || !isMap(d.AddRequest)) throw new Error('unknown event data');
  const a = d.AddRequest;
  let seq: BigUint64Array | null = null;
  if (Array.isArray(a.token_sequence)) {
    seq = new BigUint64Array(a.token_sequence.length);
    a.token_sequence.forEach((h, i) => {
      const x = u64(h);
      if (x === null) throw new Error('bad token_sequence');
      (seq as BigUint64Array)[i] = x;
    });
  } else if (a.token_sequence != null) throw new Error('bad token_sequence');
  const hint = a.prefill_load_hint;
  const initial = isMap(hint) ? u32(hint.initial_effective_prefill_tokens) : null;
  const track = a.track_prefill_tokens === undefined ? true : a.track_prefill_tokens === true;
  return {
    routerId,
    event: {
      ...ref, kind: 'add', seq, trackPrefillTokens: track,
      expectedOutputTokens: a.expected_output_tokens == null ? null : u32(a.expected_output_tokens),
      prefillTokens: track ? initial ?? 0 : 0,
    },
  };
}

/** Encodes a binding event (the named-field map Dynamo writes). */
export function encodeAffinityEvent(e: AffinityEvent): Buffer {
  return packr.pack({
    model_name: e.modelName, routing_group: e.routingGroup, session_id: e.sessionId, worker_id: wire(e.workerId),
    dp_rank: e.dpRank, sequence: wire(e.sequence), writer_id: wire(e.writerId),
  });
}

/** Decodes a binding event; throws on a bad shape. */
export function decodeAffinityEvent(buf: Uint8Array): AffinityEvent {
  const v: unknown = unpackr.unpack(buf);
  if (!isMap(v)) throw new Error('not a map');
  const w = u64(v.worker_id), seq = u64(v.sequence), writer = u64(v.writer_id);
  const rank = v.dp_rank == null ? null : u32(v.dp_rank);
  if (typeof v.model_name !== 'string' || typeof v.routing_group !== 'string' || typeof v.session_id !== 'string'
    || w === null || seq === null || writer === null || (v.dp_rank != null && rank === null)) throw new Error('bad binding event');
  return { modelName: v.model_name, routingGroup: v.routing_group, sessionId: v.session_id, workerId: w, dpRank: rank, sequence: seq, writerId: writer };
}
