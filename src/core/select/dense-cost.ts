/**
 * The cost of every eligible rank of one dense pass (select/rank-view.ts), over the pass's columns
 * and the partition's load columns, in the steps of `defaultCosts` (select/selector.ts), which
 * stays the object-form reference the tests compare with.
 */
import type { CostParams } from './selector.js';
import { requestBlocks, preferredTaintMultiplier } from './selector.js';
import type { RankView, SelectScratch } from './rank-view.js';
import type { ActiveLoads } from '../load/loads.js';

/**
 * The cost (`lib/kv-router/src/scheduling/selector/default.rs`) of every eligible position of the pass into `S.costs` (lower is better): the
 * same steps as `defaultCosts` over the candidate rows the object form would build (a load per
 * rank, no shared-cache hits). `nBlocks` is the prompt's tracked blocks.
 */
export function denseCosts(S: SelectScratch, view: RankView, loads: ActiveLoads, p: CostParams, nBlocks: number): Float64Array {
  const n = S.nKept, costs = S.costs, rows = view.rows;
  const prefill = loads.prefill, requests = loads.requests, blocks = loads.blocks;
  const dev = S.dev, host = S.host, disk = S.disk, cached = S.cached, depth = S.depth;
  const bs = p.blockSize, isl = p.islTokens;
  const track = p.trackPrefillTokens;
  const decayOn = track && p.overlapScoreCreditDecay > 0;
  let minActive = Infinity;
  if (decayOn) for (let i = 0; i < n; i++) minActive = Math.min(minActive, prefill[rows[S.posAt(i)]]);
  const reqBlocks = requestBlocks(isl, bs);
  const taintsOn = hasAny(p.preferredTaints);
  const credit0 = p.overlapScoreCredit, decayK = p.overlapScoreCreditDecay, hw = p.hostCacheHitWeight, dw = p.diskCacheHitWeight;
  const sm = p.sharedCacheMultiplier, scale = p.prefillLoadScale, arw = p.decodeActiveRequestWeight;
  const all = S.all, kept = S.kept;
  // every rank eligible, no decay, finite weights: the rows the prompt matched nothing on first
  if (all && !decayOn && credit0 * 1 * 0 + hw * 0 + dw * 0 + sm * 0 === 0) {
    unmatchedCosts(S, view, loads, p, nBlocks, taintsOn);
    return costs;
  }
  for (let i = 0; i < n; i++) {
    const pos = all ? i : kept[i];
    const row = rows[pos];
    const active = prefill[row];
    const c = cached[row];
    const rawPrefillTokens = !track ? 0 : active + (isl - Math.min(Math.max(0, c), isl)) + c;
    const decay = decayOn ? 1 / (1 + (decayK * ((active - minActive) / bs)) / reqBlocks) : 1;
    const credit = credit0 * decay * dev[row] + hw * host[row] + dw * disk[row] + sm * 0;
    const decode = Math.round(blocks.weightedSize(row)) + Math.max(0, nBlocks - depth[row]);
    const activeRequestCost = arw * requests[row];
    const adjusted = Math.max(0, rawPrefillTokens / bs - credit);
    const logit = scale * adjusted + decode + activeRequestCost;
    costs[i] = taintsOn ? logit * groupMultiplier(S, view, view.taintGroup[pos], p.preferredTaints) : logit;
  }
  return costs;
}

/**
 * {@link denseCosts} when every rank is eligible, without decay and with finite credit weights.
 * A row the prompt matched nothing on (device, host, disk and cached 0, active depth 0) costs, in
 * `defaultCosts`' own steps with those zeros folded exactly: the credit is ±0, so
 * `max(0, raw / bs - credit) = raw / bs` with `raw = active + isl` (tracking) or 0, and the decode
 * term is `decode + nBlocks`; the folds hold bit for bit because every term is finite and `raw`
 * is never -0. So every position is costed from the three load columns alone, then the rows the
 * match or the active-depth pass wrote are costed again in full. At 8,000 ranks the full formula
 * per rank was ~80 µs of an ~260 µs selection.
 */
function unmatchedCosts(S: SelectScratch, view: RankView, loads: ActiveLoads, p: CostParams, nBlocks: number, taintsOn: boolean): void {
  const n = S.nKept, costs = S.costs, rows = view.rows;
  const prefill = loads.prefill, requests = loads.requests, blocks = loads.blocks;
  const bs = p.blockSize, isl = p.islTokens, track = p.trackPrefillTokens;
  const scale = p.prefillLoadScale, arw = p.decodeActiveRequestWeight;
  for (let pos = 0; pos < n; pos++) {
    const row = rows[pos];
    const raw = track ? prefill[row] + isl : 0;
    const logit = scale * (raw / bs) + (Math.round(blocks.weightedSize(row)) + nBlocks) + arw * requests[row];
    costs[pos] = taintsOn ? logit * groupMultiplier(S, view, view.taintGroup[pos], p.preferredTaints) : logit;
  }
  // the rows the match or the depth pass wrote: the full formula (one row at a time)
  const posOfRow = view.posOfRow;
  for (let k = 0; k < 2; k++) {
    const list = k === 0 ? S.touched : S.depthRows, m = k === 0 ? S.nTouched : S.nDepth;
    for (let j = 0; j < m; j++) {
      const row = list[j], pos = row < posOfRow.length ? posOfRow[row] : -1;
      if (pos >= 0) costs[pos] = fullCost(S, view, loads, p, nBlocks, pos, taintsOn);
    }
  }
}

/** The full cost of position `pos` (no decay), the steps of `denseCosts`' loop. */
function fullCost(S: SelectScratch, view: RankView, loads: ActiveLoads, p: CostParams, nBlocks: number, pos: number, taintsOn: boolean): number {
  const row = view.rows[pos];
  const active = loads.prefill[row], c = S.cached[row], bs = p.blockSize, isl = p.islTokens;
  const rawPrefillTokens = !p.trackPrefillTokens ? 0 : active + (isl - Math.min(Math.max(0, c), isl)) + c;
  const credit = p.overlapScoreCredit * 1 * S.dev[row] + p.hostCacheHitWeight * S.host[row] + p.diskCacheHitWeight * S.disk[row] + p.sharedCacheMultiplier * 0;
  const decode = Math.round(loads.blocks.weightedSize(row)) + Math.max(0, nBlocks - S.depth[row]);
  const activeRequestCost = p.decodeActiveRequestWeight * loads.requests[row];
  const adjusted = Math.max(0, rawPrefillTokens / bs - credit);
  const logit = p.prefillLoadScale * adjusted + decode + activeRequestCost;
  return taintsOn ? logit * groupMultiplier(S, view, view.taintGroup[pos], p.preferredTaints) : logit;
}

/** The preferred-taint multiplier of a taint group, computed once per pass. */
function groupMultiplier(S: SelectScratch, view: RankView, g: number, preferred: Readonly<Record<string, number>>): number {
  if (S.groupStamp[g] !== S.pass) {
    S.groupStamp[g] = S.pass;
    S.groupMult[g] = preferredTaintMultiplier(view.groupTaints[g], preferred);
  }
  return S.groupMult[g];
}

function hasAny(rec: Readonly<Record<string, number>>): boolean {
  for (const k in rec) if (Object.prototype.hasOwnProperty.call(rec, k)) return true;
  return false;
}
