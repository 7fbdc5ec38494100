/**
 * The request's eligible ranks as positions of a dense pass (select/rank-view.ts): the same rows,
 * in the same order, as `eligible` (select/selector.ts) over the object form.
 */
import { pinnedNotAllowed } from '../errors.js';
import { holdsTaints } from './selector.js';
import type { RankView, SelectScratch } from './rank-view.js';
import type { SelectAndReserveRequest } from '../wire/schemas.js';
import type { AffinityTarget } from '../booking/affinity.js';

/**
 * The eligibility filters (`lib/kv-router/src/scheduling/filter.rs`) as positions of the pass: allowed ids, required taints, pinned
 * worker/rank, affinity target, then the session target (`steer`) narrows them to the bound worker
 * (and rank) while it is among them (hard mode then rejects a dispatch elsewhere). The
 * same rows, in the same order, as `eligible` over the object form; throws
 * {@link pinnedNotAllowed} (400) when the pinned worker is outside the allow-set, first.
 */
export function keepEligible(view: RankView, S: SelectScratch, req: SelectAndReserveRequest, steer: AffinityTarget | undefined): void {
  const ids = req.allowed_worker_ids;
  const allowed = ids !== undefined ? new Set(ids) : undefined;
  const pin = req.pinned_worker, target = req.affinity_target, required = req.routing_constraints.required_taints;
  if (pin !== undefined && allowed !== undefined && !allowed.has(pin.worker_id)) throw pinnedNotAllowed(pin.worker_id);
  S.all = true;
  S.nKept = view.n;
  if (allowed !== undefined || pin !== undefined || target !== undefined || required.length > 0) {
    // the positions to look at: one worker's for a pin or a target, the allowed workers', or all
    const spans: [number, number][] = [];
    if (pin !== undefined || target !== undefined) spans.push(view.span((pin ?? target)!.worker_id));
    else if (allowed !== undefined) {
      for (const w of allowed) { const sp = view.span(w); if (sp[1] > sp[0]) spans.push(sp); }
      spans.sort((a, b) => a[0] - b[0]);
    } else spans.push([0, view.n]);
    const ok = required.length > 0 ? new Int8Array(view.groupTaints.length) : null; // 1 holds, 2 lacks
    let k = 0;
    for (const [first, end] of spans) {
      for (let p = first; p < end; p++) {
        const w = view.workerIds[p], dp = view.dpRanks[p];
        if (allowed !== undefined && !allowed.has(w)) continue;
        if (pin !== undefined && (w !== pin.worker_id || dp !== pin.dp_rank)) continue;
        if (target !== undefined && (w !== target.worker_id || (target.dp_rank !== undefined && dp !== target.dp_rank))) continue;
        if (ok !== null) {
          const g = view.taintGroup[p];
          if (ok[g] === 0) ok[g] = holdsTaints(view.groupTaints[g], required) ? 1 : 2;
          if (ok[g] === 2) continue;
        }
        S.kept[k++] = p;
      }
    }
    S.all = false;
    S.nKept = k;
  }
  if (steer === undefined) return;
  let m = 0;
  for (let i = 0; i < S.nKept; i++) {
    const p = S.posAt(i);
    if (view.workerIds[p] === steer.workerId && (steer.dpRank === null || view.dpRanks[p] === steer.dpRank)) m++;
  }
  if (m === 0) return;
  let k = 0;
  for (let i = 0; i < S.nKept; i++) {
    const p = S.posAt(i);
    if (view.workerIds[p] === steer.workerId && (steer.dpRank === null || view.dpRanks[p] === steer.dpRank)) S.kept[k++] = p;
  }
  S.all = false;
  S.nKept = k;
}
