/** Shared fixtures of the SelectionCore tests: a virtual clock and Dynamo's HTTP-test worker. */
import { SelectionCore } from '../../../src/core/core.js';
import { seededRng } from '../../../src/core/random.js';
import { type CoreOptions } from '../../../src/core/options.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionError } from '../../../src/core/errors.js';
import assert from 'node:assert/strict';
import { CandidateRowView, type CandidateView } from '../../../src/core/select/policy.js';
import type { Candidate } from '../../../src/core/select/selector.js';

/** `a` within `rel` (relative) of `b`, the message naming `what`. */
export const close = (a: number, b: number, rel: number, what: string): void =>
  assert.ok(Math.abs(a - b) <= rel * Math.abs(b), `${what}: ${a} vs ${b} (±${rel * 100}%)`);

export class ManualClock {
  t = 0;
  now(): number { return this.t; }
  advance(ms: number): void { this.t += ms; }
  advanceSecs(s: number): void { this.t += s * 1000; }
}

/** A core like Dynamo's HTTP fixture: use_kv_events=false, no queue threshold. */
export function makeCore(env: Record<string, string> = {}, o: CoreOptions = {}): { core: SelectionCore; clock: ManualClock } {
  const clock = new ManualClock();
  const config = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false', ...env });
  const core = SelectionCore.newLocal(config, { clock, rng: seededRng(7), ...o });
  return { core, clock };
}

/** Dynamo's fixture worker. */
export function worker(id: number | bigint, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { worker_id: id, model_name: 'model', endpoint: `http://worker-${id}:8000`, block_size: 4, ...extra };
}

/** Asserts that `fn` throws (or rejects with) a SelectionError of `status` whose message matches. */
export async function rejects(fn: () => unknown, status: number, message?: RegExp | string): Promise<SelectionError> {
  let caught: unknown;
  try { await fn(); } catch (err) { caught = err; }
  assert.ok(caught instanceof SelectionError, `expected a SelectionError, got ${String(caught)}`);
  assert.equal(caught.status, status, `status of "${caught.message}"`);
  if (message instanceof RegExp) assert.match(caught.message, message);
  else if (message !== undefined) assert.equal(caught.message, message);
  return caught;
}

/**
 * A policy configuration with a `latency` class that may not queue at all (limit 0 per worker)
 * and a standard class that queues one request per worker: a busy worker makes `latency` 429.
 */
export const QUEUE_LIMIT_POLICY = {
  default_policy_family: 'standard',
  uncached_isl_buckets: [{ min_tokens: 0, bucket: 'all' }],
  policy_classes: [
    { name: 'std', policy_family: 'standard', cache_bucket: 'all', quantum: 1, prefill_busy_threshold_frac: 1.0, request_queue_limit_per_worker: 1 },
    { name: 'latency', quantum: 1, prefill_busy_threshold: 0, request_queue_limit_per_worker: 0 },
  ],
};

/** A candidate view over a row with every field neutral but those given (policies' unit tests). */
export function candidateView(o: Partial<Candidate> & { workerId: bigint }): CandidateView {
  return new CandidateRowView({
    dpRank: 0, taints: [], deviceBlocks: 0, hostExtBlocks: 0, diskExtBlocks: 0, sharedBeyondDeviceBlocks: 0, cachedTokens: 0,
    hasLoad: true, activePrefillTokens: 0, potentialDecodeBlocks: 0, activeRequests: 0, prefillPendingRequests: 0,
    totalKvBlocks: null, maxNumBatchedTokens: null, ...o,
  });
}
