/**
 * kv_hint envelopes (Dynamo `lib/kv-router/src/services/selection/core/hint.rs`): on a booking, when another worker of the same hint type holds a
 * strictly longer root-aligned prefix than the booked rank, tell the booked worker where to
 * fetch the KV from. Built only from the local event-driven index (the caller checks the mode).
 */
import type { WorkerEntry } from '../catalog/catalog.js';
import { ranksOf } from '../catalog/catalog.js';
import type { KvIndex } from '../index/kv-index.js';
import type { KvHint } from '../wire/types.js';

/** Whether any worker of the partition can consume hints. */
export const hintCapable = (workers: Iterable<WorkerEntry>): boolean => {
  for (const w of workers) if (w.req.router_hint_worker_type) return true;
  return false;
};

/**
 * The hint for a booking of `target` (worker, rank) whose own cached device prefix is
 * `targetDepth` blocks, or undefined. Sources: schedulable workers of the same
 * `router_hint_worker_type`, not `kv_event_source_mode = "state_agent_v2"`, with a source
 * control endpoint for their rank, holding a strictly longer prefix; longest wins, ties to the
 * lowest (worker_id, dp_rank).
 */
export function buildKvHint(index: KvIndex, workers: Iterable<WorkerEntry>, target: { workerId: bigint; dpRank: number },
  targetType: string | undefined, targetDepth: number, locals: ArrayLike<bigint>, selectionId: string): KvHint | undefined {
  if (!targetType || locals.length === 0) return undefined;
  let best: { exts: bigint[]; endpoint: string; w: bigint; r: number } | undefined;
  const sorted = [...workers].sort((a, b) => (a.req.worker_id < b.req.worker_id ? -1 : a.req.worker_id > b.req.worker_id ? 1 : 0));
  for (const e of sorted) {
    const w = e.req;
    if (e.lifecycle !== 'schedulable' || w.router_hint_worker_type !== targetType || w.kv_event_source_mode === 'state_agent_v2') continue;
    for (const r of ranksOf(w)) {
      if (w.worker_id === target.workerId && r === target.dpRank) continue;
      const endpoint = w.router_hint_source_control_endpoints.get(r);
      if (!endpoint) continue;
      const exts = index.chainExts(w.worker_id, r, locals);
      if (exts.length > targetDepth && (!best || exts.length > best.exts.length)) best = { exts, endpoint, w: w.worker_id, r };
    }
  }
  if (!best) return undefined;
  return {
    protocol_version: '0.1', message_id: selectionId,
    actions: [{ action_id: 'a1', action_type: 'kv.fetch', action_version: '1.0', payload: { source_control_endpoint: best.endpoint, block_hashes: best.exts } }],
  };
}
