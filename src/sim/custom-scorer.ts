/**
 * User-written scorers for the `custom` policy: a function `(ctx, cands, out)` that writes one
 * finite cost per candidate into `out` (lower wins), with the accessors of the core's
 * custom-policy API (Dynamo `lib/kv-router/src/services/selection/service.rs`: `ctx.promptTokens()`, `ctx.requestBlocks()`, `ctx.blockSize()`,
 * `ctx.sessionId()`, ...; per candidate `deviceOverlapBlocks()`, `activePrefillTokens()`,
 * `decodeCostBlocks()`, `activeRequests()`, `worker()`, ...). The page and the CLI take the body
 * of that function as text; TypeScript users pass a `WorkerScorer` object directly.
 */
import type { CandidateView, WorkerScorer, WorkerSelectionContext } from '../core/select/policy.js';

/** A scorer function. */
export type ScoreFn = (ctx: WorkerSelectionContext, cands: readonly CandidateView[], out: Float64Array) => void;

/** The example user scorer: uncached blocks + queued prefill + half-weighted decode load. */
export const EXAMPLE_SCORER = `// Lower cost wins. ctx: the request; cands[i]: a worker rank; out[i]: its cost.
const bs = ctx.blockSize();
for (let i = 0; i < cands.length; i++) {
  const c = cands[i];
  const uncached = ctx.requestBlocks() - c.deviceOverlapBlocks();
  out[i] = uncached + c.activePrefillTokens() / bs + 0.5 * c.decodeCostBlocks();
}`;

/** A scorer from a function. */
export function scorerOf(fn: ScoreFn): WorkerScorer {
  return { score: fn };
}

/**
 * A scorer from the text of a function body over `ctx`, `cands`, `out` (it runs with the
 * privileges of the caller: only compile text the user wrote for their own simulation).
 * Throws a SyntaxError for a body that does not parse.
 */
export function compileScorer(body: string): WorkerScorer {
  const fn = new Function('ctx', 'cands', 'out', body) as ScoreFn;
  return scorerOf(fn);
}
