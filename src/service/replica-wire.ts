/**
 * Replica-sync wire format (api §6), wire-compatible with Dynamo's `rmp_serde::to_vec_named`:
 * two frames `[topic, msgpack map with named fields]`; unit enum variants as the variant-name
 * string, data variants as a one-entry map, `None` as nil. u64 values stay exact (bigint).
 *
 * Topics: `dynamo.slot-tracker.v1` (lifecycle, the v1 envelope with exactly four keys:
 * model_name, routing_group, block_size, event) and `dynamo.session-affinity.v1` (bindings).
 * A legacy envelope with `tenant_id` (and no `routing_group`) is rejected.
 */
import { Packr, Unpackr } from 'msgpackr';
import { toU64 } from '../core/wire/json.js';

export const LIFECYCLE_TOPIC = 'dynamo.slot-tracker.v1';
export const AFFINITY_TOPIC = 'dynamo.session-affinity.v1';

/** The lifecycle event of one booking. */
export interface ReplicaEvent {
  modelName: string;
  routingGroup: string;
  blockSize: number;
  requestId: string;
  workerId: bigint;
  dpRank: number;
  routerId: bigint;
  loraName: string | null;
  data:
    | { kind: 'add'; tokenSequence: bigint[] | null; trackPrefillTokens: boolean; expectedOutputTokens: number | null; initialEffectivePrefillTokens: number | null }
    | { kind: 'free' }
    | { kind: 'prefill_complete' };
}

/** A session binding (api §6 affinity envelope). */
export interface AffinityWireEvent {
  model_name: string; routing_group: string; session_id: string; worker_id: bigint; dp_rank: number | null; sequence: bigint; writer_id: bigint;
}

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

/** Encodes a lifecycle event (payload frame). */
export function encodeReplicaEvent(e: ReplicaEvent): Buffer {
  let data: unknown;
  if (e.data.kind === 'add') {
    const d = e.data;
    data = {
      AddRequest: {
        token_sequence: d.tokenSequence === null ? null : d.tokenSequence.map(wire),
        track_prefill_tokens: d.trackPrefillTokens,
        expected_output_tokens: d.expectedOutputTokens,
        prefill_load_hint: d.initialEffectivePrefillTokens === null ? null
          : { initial_effective_prefill_tokens: d.initialEffectivePrefillTokens, expected_prefill_duration: null },
      },
    };
  } else data = e.data.kind === 'free' ? 'Free' : 'MarkPrefillCompleted';
  return packr.pack({
    model_name: e.modelName,
    routing_group: e.routingGroup,
    block_size: e.blockSize,
    event: {
      request_id: e.requestId,
      worker: { worker_id: wire(e.workerId), dp_rank: e.dpRank },
      data,
      router_id: wire(e.routerId),
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
  let data: ReplicaEvent['data'];
  const d = event.data;
  if (d === 'Free') data = { kind: 'free' };
  else if (d === 'MarkPrefillCompleted') data = { kind: 'prefill_complete' };
  else if (isMap(d) && isMap(d.AddRequest)) {
    const a = d.AddRequest;
    let seq: bigint[] | null = null;
    if (Array.isArray(a.token_sequence)) {
      seq = a.token_sequence.map((h) => {
        const x = u64(h);
        if (x === null) throw new Error('bad token_sequence');
        return x;
      });
    } else if (a.token_sequence != null) throw new Error('bad token_sequence');
    const hint = a.prefill_load_hint;
    const initial = isMap(hint) ? u32(hint.initial_effective_prefill_tokens) : null;
    const eot = a.expected_output_tokens == null ? null : u32(a.expected_output_tokens);
    data = {
      kind: 'add', tokenSequence: seq, trackPrefillTokens: a.track_prefill_tokens === undefined ? true : a.track_prefill_tokens === true,
      expectedOutputTokens: eot, initialEffectivePrefillTokens: initial,
    };
  } else throw new Error('unknown event data');
  return {
    modelName: model_name, routingGroup: routing_group, blockSize: bs, requestId: event.request_id,
    workerId, dpRank, routerId, loraName: typeof lora === 'string' ? lora : null, data,
  };
}

/** Encodes a binding event. */
export function encodeAffinityEvent(e: AffinityWireEvent): Buffer {
  return packr.pack({
    model_name: e.model_name, routing_group: e.routing_group, session_id: e.session_id, worker_id: wire(e.worker_id),
    dp_rank: e.dp_rank, sequence: wire(e.sequence), writer_id: wire(e.writer_id),
  });
}

/** Decodes a binding event; throws on a bad shape. */
export function decodeAffinityEvent(buf: Uint8Array): AffinityWireEvent {
  const v: unknown = unpackr.unpack(buf);
  if (!isMap(v)) throw new Error('not a map');
  const w = u64(v.worker_id), seq = u64(v.sequence), writer = u64(v.writer_id);
  const rank = v.dp_rank == null ? null : u32(v.dp_rank);
  if (typeof v.model_name !== 'string' || typeof v.routing_group !== 'string' || typeof v.session_id !== 'string'
    || w === null || seq === null || writer === null || (v.dp_rank != null && rank === null)) throw new Error('bad binding event');
  return { model_name: v.model_name, routing_group: v.routing_group, session_id: v.session_id, worker_id: w, dp_rank: rank, sequence: seq, writer_id: writer };
}
