/**
 * One policy's run: a trace replayed in virtual time against a simulated fleet with a fresh real
 * SelectionCore (wasm prefix index, active loads, selector or custom policy) routing every
 * request through the real lifecycle — `select_and_reserve` on arrival, `prefill_complete` at the
 * first token, `output_block` at each block boundary, `free` at the end — while the engines feed
 * the index with the KV events a real engine would publish. simulate.ts runs it once per policy;
 * saturation.ts runs it to measure a fleet's throughput.
 *
 * Deterministic for a seed: time is virtual, the core gets `seededRng(seed)`, and equal-time
 * events run in scheduling order. Only `wall_ms` varies between runs.
 */
import { SelectionCore } from '../core/core.js';
import { seededRng } from '../core/random.js';
import { parseRouterConfig, queueingEnabled } from '../core/config/config.js';
import type { WorkerScorer } from '../core/select/policy.js';
import type { BlockIds } from './block-ids.js';
import { EventQueue, VirtualClock } from './event-queue.js';
import { SimEngine, newRequest, type EngineHooks } from './engine.js';
import { SIM_GROUP, SIM_MODEL, overDefaults, registerFleet, workerParams, type FleetConfig } from './fleet.js';
import { IndexSink } from './index-sink.js';
import { MetricsRecorder, type PolicyMetrics } from './metrics.js';
import { policySetup, type CostKnobs, type PolicySpec } from './policies.js';
import { sessionOf, type Trace } from './trace.js';

/** Progress of a simulation (requests routed so far in the current policy). */
export interface SimProgress { policy: string; index: number; policies: number; done: number; total: number }

/** How a policy run goes (the fleet and the policies are given separately). */
export interface RunSettings {
  /** Cost knobs of the kv-based policies (defaults: credit 1, scale 1, temperature 0). */
  knobs?: Partial<CostKnobs>;
  seed?: number;
  /** Samples of the time series over the trace's duration (default 120). */
  samples?: number;
  /** Scorer of the `custom` policy. */
  scorer?: WorkerScorer;
  /**
   * The core's admission queue (Dynamo `lib/kv-router/src/scheduling/queue.rs`): `threshold` is `router_queue_threshold` (a rank is
   * busy above threshold x its `max_num_batched_tokens` of active prefill tokens); off by default.
   */
  queue?: { threshold: number; policy?: 'fcfs' | 'wspt' | 'lcfs' };
  onProgress?(p: SimProgress): void;
  /** Requests between progress reports (default 500). */
  progressEvery?: number;
  /** Run decode-only stretches as one event (default true; false steps one by one, with the same results). */
  fastPath?: boolean;
  /**
   * What the simulated clients send as `expected_output_tokens`: `trace`, each request's output
   * length (default), or `none`, nothing (the way most clients call the service: `ttft` then
   * prices a request's decode at the output length the service has learned).
   */
  expectedOutput?: ExpectedOutput;
}

/** What simulated clients send as `expected_output_tokens` (see {@link RunSettings.expectedOutput}). */
export type ExpectedOutput = 'trace' | 'none';
export const EXPECTED_OUTPUT: readonly ExpectedOutput[] = Object.freeze(['trace', 'none']);

/** `v` as an {@link ExpectedOutput} (undefined: the default); throws `<what>: trace or none (got v)`. */
export function expectedOutputOf(v: unknown, what: string): ExpectedOutput | undefined {
  if (v !== undefined && !(EXPECTED_OUTPUT as readonly unknown[]).includes(v)) throw new Error(`${what}: ${EXPECTED_OUTPUT.join(' or ')} (got ${String(v)})`);
  return v as ExpectedOutput | undefined;
}

/** Microtask turns a settled `selectAndReserve` needs to reach its `.then` (async method + adoption). */
const SETTLE_TURNS = 16;

export const DEFAULT_KNOBS: Readonly<CostKnobs> = Object.freeze({ overlapScoreCredit: 1, prefillLoadScale: 1, routerTemperature: 0 });

/** Settings of one run: arrival speed, its place in a comparison, and where to record end times. */
export interface RunOptions extends RunSettings {
  speed: number;
  index: number;
  count: number;
  /** Filled with each request's completion time, virtual ms (by trace index). */
  ends?: Float64Array;
}

/** One policy over the trace. */
export async function runPolicy(trace: Trace, ids: BlockIds, fleet: FleetConfig, spec: PolicySpec, o: RunOptions): Promise<PolicyMetrics> {
  const wall0 = performance.now();
  const clock = new VirtualClock();
  const events = new EventQueue(clock);
  const setup = policySetup(spec, { knobs: overDefaults(DEFAULT_KNOBS, o.knobs), scorer: o.scorer });
  // Expiry is a guard against lost frees; a simulation loses none, and its queues may be long.
  const config = parseRouterConfig({}, {
    useKvEvents: true, activeRequestExpirySecs: 10 * 365 * 86400, ...setup.overrides,
    routerQueueThreshold: o.queue?.threshold, routerQueuePolicy: o.queue?.policy,
  });
  const core = SelectionCore.newLocal(config, {
    clock, rng: seededRng(o.seed ?? 0), policies: setup.policies, sessionAffinity: setup.sessionAffinity, affinitySequenceStart: 1n,
  });
  try {
    registerFleet(core, fleet);
    const part = core.partition(SIM_MODEL, SIM_GROUP);
    if (!part) throw new Error('the simulated partition was not created');
    const sink = new IndexSink(part.index, ids);
    const ranks = part.schedulableRanks().map(({ entry, dpRank }) => ({ workerId: entry.req.worker_id, dpRank }));
    const rankOf = new Map(ranks.map((r, i) => [`${r.workerId}:${r.dpRank}`, i]));
    const rec = new MetricsRecorder(spec.label, trace.length, ranks);
    const reqRank = new Int32Array(trace.length);
    let inFlight = 0;
    const hooks: EngineHooks = {
      prefillComplete: (r) => { core.prefillComplete(r.id); rec.prefilled(r, reqRank[r.index]); },
      outputBlock: (r) => { core.addOutputBlock(r.id, {}); },
      finished: (r) => { core.freeReservation(r.id); rec.finished(r); inFlight--; if (o.ends) o.ends[r.index] = r.end; },
    };
    const params = workerParams(fleet);
    const engines = ranks.map((r, k) => new SimEngine(r.workerId, r.dpRank, params[Number(r.workerId) - 1], events, sink, hooks, k));
    for (const e of engines) e.fastPath = o.fastPath ?? true;

    const n = trace.length;
    const duration = n > 0 ? trace.timestamps[n - 1] / o.speed : 0;
    const interval = Math.max(1, duration / Math.max(1, o.samples ?? 120));
    const sample = (): void => rec.sample(clock.t, engines.map((e) => e.activeTokens));
    // the sampler also runs the core's periodic work (the queue's recheck), as a host's timer would
    const sampler = (): void => { sample(); core.maintain(); events.after(interval, sampler); };
    events.at(interval, sampler);
    // Selections are promises: with queueing on, one may wait in the core's admission queue until
    // a later prefill_complete or free drains it. Each is dispatched to its engine when it
    // settles; the loop lets settled selections run (a few microtask turns) after every step, so
    // a dispatch happens at the virtual time its selection completed.
    let selecting = 0;
    let failure: unknown = null;
    const route = (i: number): void => {
      const arrival = clock.t, keys = ids.keys(i, []), isl = ids.isl(i), osl = trace.outputLength[i];
      selecting++;
      core.selectAndReserve({
        model_name: SIM_MODEL, routing_group: SIM_GROUP, selection_id: `r${i}`,
        block_hashes: keys.map((k) => ids.local(k)), sequence_hashes: keys.map((k) => ids.seq(k)), isl_tokens: isl,
        expected_output_tokens: o.expectedOutput === 'none' ? undefined : osl, session_id: sessionOf(trace, i),
      }).then((res) => {
        selecting--;
        const rank = rankOf.get(`${res.worker_id}:${res.dp_rank}`) as number;
        reqRank[i] = rank;
        engines[rank].arrive(newRequest(i, isl, osl, keys, arrival, clock.t));
      }, (err: unknown) => { failure ??= err; });
    };
    const every = o.progressEvery ?? 500;
    const stallAt = duration * 100 + 30 * 86_400_000;
    let next = 0;
    while (next < n || inFlight > 0) {
      const tArrival = next < n ? trace.timestamps[next] / o.speed : Infinity;
      if (events.peekTime() <= tArrival) events.runNext();
      else {
        clock.t = tArrival;
        inFlight++;
        route(next++);
        if (next % every === 0 || next === n) o.onProgress?.({ policy: spec.label, index: o.index, policies: o.count, done: next, total: n });
      }
      if (selecting > 0) for (let k = 0; k < SETTLE_TURNS && selecting > 0; k++) await null;
      if (failure !== null) throw failure;
      if (selecting > 0 && !queueingEnabled(config, false)) throw new Error('internal: a selection did not settle in time');
      if (clock.t > stallAt) throw new Error(`simulation stalled: ${inFlight} requests unfinished at ${Math.round(clock.t / 1000)} s`);
    }
    sample();
    const evicted = engines.reduce((s, e) => s + e.cache.evicted, 0);
    return rec.summary({
      stored: sink.storedBlocks, evicted, mismatches: sink.mismatches, wallMs: performance.now() - wall0, engines: engines.map((e) => e.counters),
    });
  } finally {
    core.shutdown();
    for (const p of core.partitionList()) p.destroy();
  }
}
