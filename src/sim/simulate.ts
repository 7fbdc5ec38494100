/**
 * The simulation: a trace replayed in virtual time against a simulated fleet, once per policy,
 * each time with a fresh real SelectionCore (wasm prefix index, active loads, selector or custom
 * policy) routing every request through the real lifecycle — `select_and_reserve` on arrival,
 * `prefill_complete` at the first token, `output_block` at each block boundary, `free` at the end
 * — while the engines feed the index with the KV events a real engine would publish.
 *
 * Deterministic for a seed: time is virtual, every policy's core gets `seededRng(seed)`, and
 * equal-time events run in scheduling order. Only `wall_ms` varies between runs.
 */
import { SelectionCore } from '../core/core.js';
import { seededRng } from '../core/random.js';
import { parseRouterConfig, queueingEnabled } from '../core/config/config.js';
import type { WorkerScorer } from '../core/select/policy.js';
import { BlockIds } from './block-ids.js';
import { EventQueue, VirtualClock } from './event-queue.js';
import { SimEngine, newRequest, type EngineHooks } from './engine.js';
import { SIM_GROUP, SIM_MODEL, engineParams, fleetConfig, overDefaults, registerFleet, type FleetConfig } from './fleet.js';
import { IndexSink } from './index-sink.js';
import { MetricsRecorder, type PolicyMetrics } from './metrics.js';
import { parsePolicies, policySetup, type CostKnobs, type PolicySpec } from './policies.js';
import { sessionOf, type Trace } from './trace.js';

/** Progress of a simulation (requests routed so far in the current policy). */
export interface SimProgress { policy: string; index: number; policies: number; done: number; total: number }

export interface SimulationOptions {
  fleet?: Partial<FleetConfig>;
  /** Specs or a comma-separated list (default `kv,round_robin,random,least_loaded`). */
  policies?: readonly PolicySpec[] | string;
  /** Cost knobs of the kv-based policies (defaults: credit 1, scale 1, temperature 0). */
  knobs?: Partial<CostKnobs>;
  seed?: number;
  /** Arrival-time compression: 2 replays the trace twice as fast (default 1). */
  speed?: number;
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
}

export interface SimulationResult {
  fleet: FleetConfig;
  seed: number;
  speed: number;
  requests: number;
  policies: PolicyMetrics[];
}

/** Microtask turns a settled `selectAndReserve` needs to reach its `.then` (async method + adoption). */
const SETTLE_TURNS = 16;

export const DEFAULT_POLICIES = 'kv,round_robin,random,least_loaded';
export const DEFAULT_KNOBS: Readonly<CostKnobs> = Object.freeze({ overlapScoreCredit: 1, prefillLoadScale: 1, routerTemperature: 0 });

/** Run every policy over `trace` on the same fleet, one after another. */
export async function simulate(trace: Trace, o: SimulationOptions = {}): Promise<SimulationResult> {
  const fleet = fleetConfig(o.fleet);
  const specs = typeof o.policies === 'string' || o.policies === undefined ? parsePolicies(o.policies ?? DEFAULT_POLICIES) : o.policies;
  const speed = o.speed ?? 1;
  if (!(speed > 0 && Number.isFinite(speed))) throw new Error(`speed must be a positive number (got ${speed})`);
  const ids = new BlockIds(trace, fleet.blockSize);
  checkFits(trace, ids, fleet);
  const out: PolicyMetrics[] = [];
  for (let k = 0; k < specs.length; k++) {
    out.push(await runOne(trace, ids, fleet, specs[k], { ...o, speed, index: k, count: specs.length }));
  }
  return { fleet, seed: o.seed ?? 0, speed, requests: trace.length, policies: out };
}

/** Every request must fit one rank's KV memory on its own (vLLM rejects longer ones at admission). */
function checkFits(trace: Trace, ids: BlockIds, fleet: FleetConfig): void {
  let worst = 0, at = 0;
  for (let i = 0; i < trace.length; i++) {
    const isl = ids.isl(i);
    const blocks = Math.ceil(Math.max(isl, isl + trace.outputLength[i] - 1) / fleet.blockSize);
    if (blocks > worst) { worst = blocks; at = i; }
  }
  if (worst > fleet.capacityBlocks) {
    throw new Error(`request ${at} needs ${worst} KV blocks, more than a rank's ${fleet.capacityBlocks}: raise capacityBlocks`);
  }
}

interface RunOptions extends SimulationOptions { speed: number; index: number; count: number }

/** One policy over the trace (see {@link simulate}). */
async function runOne(trace: Trace, ids: BlockIds, fleet: FleetConfig, spec: PolicySpec, o: RunOptions): Promise<PolicyMetrics> {
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
      finished: (r) => { core.freeReservation(r.id); rec.finished(r); inFlight--; },
    };
    const params = engineParams(fleet);
    const engines = ranks.map((r, k) => new SimEngine(r.workerId, r.dpRank, params, events, sink, hooks, k));
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
        expected_output_tokens: osl, session_id: sessionOf(trace, i),
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
