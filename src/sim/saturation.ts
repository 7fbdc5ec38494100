/**
 * The saturation throughput of a trace on a fleet, which `load` is a fraction of.
 *
 * A pass replays the trace under the reference policy `kv` (default knobs, no router queue) at
 * one arrival rate, and counts arrivals and completions in the last three quarters of the
 * arrival span (from a quarter of the way between the first and the last arrival to the last
 * one: the first quarter fills caches and queues; after the last arrival the mix thins out as
 * queues drain). A pass falls behind when it completes fewer than 90% of what arrives in that
 * window. The saturation is the completions per second of the slowest pass found falling
 * behind, once a pass that kept up is within 1.2x below it: the throughput just past the knee.
 * Just past it, not far past: with prefix reuse, throughput falls as overload deepens (the
 * default cost spreads a shared prefix over more ranks when queues grow), so a measure taken far
 * past capacity would call a load that the fleet still serves "110%".
 *
 * The search: the first pass runs at 1.5x a cache-blind estimate of the capacity (every prompt
 * token computed, from the step profiles); while no pass has fallen behind, the rate doubles;
 * with one behind and none kept up, the next rate is 1.1x the throughput it reached; with both,
 * their geometric mean. At most 8 passes, usually 2 to 4 policy runs. Measured once per
 * (trace, fleet, seed) in a process: the result is cached on the trace object, so a sweep of
 * `load` measures once.
 */
import { BlockIds } from './block-ids.js';
import { fleetConfig, workerParams, type FleetConfig } from './fleet.js';
import { parsePolicies } from './policies.js';
import { runPolicy, type SimProgress } from './run.js';
import type { Trace } from './trace.js';

export interface Saturation {
  /** Requests/s the fleet completes past capacity under `kv`. */
  requests_per_s: number;
  /** The trace's own arrival rate at speed 1: requests over the arrival span, requests/s. */
  base_rps: number;
  /** False when even the last pass kept up (then `requests_per_s` is a lower bound). */
  saturated: boolean;
  /** The measuring passes (empty when the value was given rather than measured). */
  passes: { arrival_rps: number; completed_rps: number }[];
}

/** Passes at most; the share of arrivals a pass must complete to keep up; the bracket that ends the search. */
const MAX_PASSES = 8;
const KEEPS_UP = 0.9;
const BRACKET = 1.2;

/** Requests over the arrival span (first to last timestamp), per second at speed 1. */
export function arrivalRate(trace: Trace): number {
  const n = trace.length;
  const span = n > 1 ? trace.timestamps[n - 1] - trace.timestamps[0] : 0;
  if (!(span > 0)) throw new Error('the trace has no arrival span (fewer than two distinct timestamps): a load needs one');
  return n / (span / 1000);
}

/** The speed at which `trace` arrives at `load` x `saturationRps`. */
export function loadSpeed(trace: Trace, saturationRps: number, load: number): number {
  return (load * saturationRps) / arrivalRate(trace);
}

/** A cache-blind estimate of the fleet's capacity for this trace, requests/s: every prompt token computed. */
export function roughCapacity(trace: Trace, fleet: FleetConfig): number {
  let isl = 0, osl = 0, sq = 0, ctx = 0;
  for (let i = 0; i < trace.length; i++) {
    const x = trace.inputLength[i], y = trace.outputLength[i];
    isl += x; osl += y; sq += x * x; ctx += y * (x + y / 2);
  }
  const n = Math.max(1, trace.length);
  let total = 0;
  for (const p of workerParams(fleet)) {
    const c = p.cost;
    const ms = (isl * (c.prefillTokenMs + c.fixedMs / p.maxBatchedTokens) + (sq / 2) * c.prefillPairMs
      + osl * (c.decodeSeqMs + c.fixedMs / p.maxConcurrent) + ctx * c.decodeKvTokenMs) / n;
    total += (fleet.dpRanks * 1000) / ms;
  }
  return total;
}

/** Measure the saturation of `trace` on `fleet` (see the file comment). */
export async function measureSaturation(trace: Trace, fleetIn: Partial<FleetConfig>, o: { seed?: number; onProgress?(p: SimProgress): void } = {}): Promise<Saturation> {
  const fleet = fleetConfig(fleetIn);
  const base = arrivalRate(trace);
  const ids = new BlockIds(trace, fleet.blockSize);
  const [kv] = parsePolicies('kv');
  const n = trace.length, ends = new Float64Array(n);
  const passes: Saturation['passes'] = [];
  let rate = 1.5 * roughCapacity(trace, fleet);
  let lo = 0, hi = Infinity, atHi = 0;
  for (let k = 0; k < MAX_PASSES; k++) {
    const speed = rate / base;
    const label = `saturation pass ${k + 1} (kv at ${rate.toPrecision(3)} req/s)`;
    await runPolicy(trace, ids, fleet, { ...kv, label }, {
      seed: o.seed, speed, index: 0, count: 1, ends, samples: 1,
      onProgress: o.onProgress && ((p) => o.onProgress?.({ ...p, policy: label })),
    });
    const t0 = trace.timestamps[0] / speed, t1 = trace.timestamps[n - 1] / speed;
    const from = t0 + (t1 - t0) / 4, secs = (t1 - from) / 1000;
    let arrived = 0, done = 0;
    for (let i = 0; i < n; i++) {
      const a = trace.timestamps[i] / speed;
      if (a >= from && a <= t1) arrived++;
      if (ends[i] >= from && ends[i] <= t1) done++;
    }
    passes.push({ arrival_rps: arrived / secs, completed_rps: done / secs });
    if (done < KEEPS_UP * arrived) { hi = rate; atHi = done / secs; } else lo = rate;
    if (lo > 0 && hi / lo <= BRACKET) break;
    // nothing completed in the window (a short trace arrives faster than one request takes): the
    // rate that kept up is unknown, not 0; halve
    rate = hi === Infinity ? 2 * rate : lo === 0 ? (atHi > 0 ? Math.min(1.1 * atHi, hi / BRACKET) : hi / 2) : Math.sqrt(lo * hi);
  }
  if (hi === Infinity) return { requests_per_s: passes[passes.length - 1].completed_rps, base_rps: base, saturated: false, passes };
  if (!(atHi > 0)) {
    throw new Error(`the trace is too short to measure a saturation (${n} requests: none completed inside a pass's window in ${passes.length} passes); give a speed instead of a load`);
  }
  return { requests_per_s: atHi, base_rps: base, saturated: true, passes };
}

const cache = new WeakMap<Trace, Map<string, Promise<Saturation>>>();

/** The saturation for `load`: `given` (requests/s) as is, else measured once per (trace, fleet, seed). */
export function saturationOf(trace: Trace, fleet: FleetConfig, o: { seed?: number; given?: number; onProgress?(p: SimProgress): void }): Promise<Saturation> {
  if (o.given !== undefined) {
    if (!(o.given > 0 && Number.isFinite(o.given))) throw new Error(`saturation must be a positive number of requests/s (got ${o.given})`);
    return Promise.resolve({ requests_per_s: o.given, base_rps: arrivalRate(trace), saturated: true, passes: [] });
  }
  const byFleet = cache.get(trace) ?? new Map<string, Promise<Saturation>>();
  cache.set(trace, byFleet);
  const key = JSON.stringify({ fleet, seed: o.seed ?? 0 });
  let p = byFleet.get(key);
  if (!p) {
    p = measureSaturation(trace, fleet, o);
    byFleet.set(key, p);
    p.catch(() => byFleet.delete(key));
  }
  return p;
}
