/**
 * A prompt's overlap per rank as selection, `/potential_loads` and `/overlap_scores` all see it:
 * the primary index's tiered match with the predicted side index merged in, and the
 * `/overlap_scores` rows built from it (docs/api.md).
 *
 * The merge is Dynamo's (`merge_side_or_warn` in lib/kv-router/src/services/indexer/backend.rs,
 * used by `Indexer::find_tiered_matches` behind all three routes): a rank's device-tier match is
 * the larger of the primary's and the side index's; the host, disk and external continuations stay
 * the primary's (side entries never seed lower tiers); the cache credit (as `KvIndex` computes it) is then
 * computed from the merged tiers.
 */
import type { CreditWeights, OverlapRow, RankOverlap } from '../index/kv-index.js';
import type { RankRef } from '../catalog/partition.js';

/** Rust's `f64::round` for x >= 0 (half away from zero), as the wasm credit computes it. */
function roundHalfUp(x: number): number {
  const c = Math.ceil(x);
  return c - 0.5 > x ? c - 1 : c;
}

/** A row with `device` blocks on the device tier and the cache credit recomputed. */
function withDevice(r: RankOverlap, device: number, w: CreditWeights, blockSize: number, isl: number): RankOverlap {
  const tiers = w.hostCacheHitWeight * r.hostExt + w.diskCacheHitWeight * (r.diskExt + r.externalExt);
  const eff = device + tiers;
  const cached = Math.max(0, roundHalfUp(eff * blockSize));
  return {
    ...r, device, effectiveOverlapBlocks: eff, cachedTokens: cached,
    effectivePrefillTokens: isl - Math.min(cached, isl), routerCreditBlocks: w.overlapScoreCredit * device + tiers,
  };
}

/**
 * Merges the predicted side index's rows into the primary's (see the file comment). Ranks only
 * the side index matched get a row with the side's device match and no lower tiers.
 */
export function mergePredicted(primary: readonly RankOverlap[], side: readonly RankOverlap[], w: CreditWeights,
  blockSize: number, isl: number): RankOverlap[] {
  const byRank = new Map<string, RankOverlap>();
  for (const r of primary) byRank.set(r.key, r);
  for (const s of side) {
    const p = byRank.get(s.key);
    if (p === undefined) {
      byRank.set(s.key, withDevice({ ...s, hostExt: 0, diskExt: 0, externalExt: 0 }, s.device, w, blockSize, isl));
    } else if (s.device > p.device) {
      byRank.set(s.key, withDevice(p, s.device, w, blockSize, isl));
    }
  }
  return [...byRank.values()];
}

/**
 * `/overlap_scores` rows for `ranks` (every schedulable rank, zero rows included, in
 * the partition's `(worker_id, dp_rank)` order) from the prompt's overlap by `worker:rank` key.
 */
export function overlapScoreRows(byRank: ReadonlyMap<string, RankOverlap>, ranks: readonly RankRef[]): OverlapRow[] {
  return ranks.map(({ entry, dpRank, key }): OverlapRow => {
    const m = byRank.get(key);
    const dev = m?.device ?? 0, host = m?.hostExt ?? 0, lower = (m?.diskExt ?? 0) + (m?.externalExt ?? 0);
    return {
      worker_id: entry.req.worker_id, dp_rank: dpRank, device_blocks: dev,
      host_pinned_blocks: dev + host, disk_blocks: dev + host + lower,
      host_pinned_extension_blocks: host, disk_extension_blocks: lower, shared_beyond_device_blocks: null,
      router_credit_blocks: m ? m.routerCreditBlocks : 0,
    };
  });
}
