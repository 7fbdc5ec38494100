/**
 * KV-cache group filtering (Dynamo `lib/kv-router/src/zmq_wire/`, Dynamo's `ZmqEventNormalizer::filter_reason`).
 * Hybrid models publish one event stream per KV group (full attention, sliding window, mamba,
 * ...); only main-attention groups describe prefix-cache blocks a request can reuse. A store
 * carrying both `group_idx` and `kv_cache_spec_kind` teaches the kind of that group on that rank,
 * so later events that carry only `group_idx` (removes) are filtered the same way.
 */
import { isMainAttentionKind } from './decode.js';
import type { DroppedEvents } from './stats.js';

/** Kinds vLLM publishes for non-main groups; any other unknown string fails closed as unknown. */
const KNOWN_OTHER_KINDS = new Set([
  'sliding_window', 'sliding_window_mla', 'mamba', 'chunked_local_attention', 'encoder_only_attention', 'cross_attention',
]);

/** Why an event is filtered out, as the counter it increments; null = keep it. */
export type GroupVerdict = keyof Pick<DroppedEvents, 'nonMainAttention' | 'unknownKind' | 'unlearnedGroup'> | null;

function kindVerdict(kind: string): GroupVerdict {
  if (isMainAttentionKind(kind)) return null;
  return KNOWN_OTHER_KINDS.has(kind) ? 'nonMainAttention' : 'unknownKind';
}

export class GroupFilter {
  /** rank -> group_idx -> learned kind. */
  private readonly learned = new Map<number, Map<number, string>>();

  /** Learn from a store (call before {@link verdict}). */
  learn(rank: number, groupIdx: number | null, kind: string | null): void {
    if (groupIdx === null || kind === null) return;
    let m = this.learned.get(rank);
    if (m === undefined) { m = new Map(); this.learned.set(rank, m); }
    m.set(groupIdx, kind);
  }

  /** Keep (null) or the reason to drop an event with these fields. */
  verdict(rank: number, groupIdx: number | null, kind: string | null): GroupVerdict {
    if (kind !== null) return kindVerdict(kind);
    if (groupIdx === null) return null;
    const learned = this.learned.get(rank)?.get(groupIdx);
    if (learned !== undefined) return kindVerdict(learned);
    return groupIdx === 0 ? null : 'unlearnedGroup';
  }
}
