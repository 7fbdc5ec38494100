/**
 * Simulator speed (issue 8 target: the whole conversation trace, 8 workers, four policies in
 * under 30 s): wall time of `simulate()` per policy and in total, median of `--repeat` runs, with
 * the hit rates so a faster run that routes differently is visible. Trace parsing is timed
 * separately. The baseline replays the same trace through the engine model and the event loop
 * alone (request i to rank i % W, no core, no index): the rest of a policy's time is routing
 * through the real core and feeding its index.
 *
 *   node build/dist/bench/sim.bench.js [trace.jsonl] [--repeat 3] [--workers 8] [--block-size 512]
 *                                      [--policies kv,round_robin,random,least_loaded]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseTrace } from '../src/sim/trace.js';
import { simulate, DEFAULT_POLICIES } from '../src/sim/simulate.js';
import { BlockIds } from '../src/sim/block-ids.js';
import { EventQueue, VirtualClock } from '../src/sim/event-queue.js';
import { SimEngine, newRequest, type KvEventSink } from '../src/sim/engine.js';
import { engineParams, fleetConfig } from '../src/sim/fleet.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { repeat: { type: 'string' }, workers: { type: 'string' }, 'block-size': { type: 'string' }, policies: { type: 'string' } },
});
const path = positionals[0] ?? 'test/fixtures/mooncake/conversation_trace.jsonl';
const repeat = Number(values.repeat ?? 3);
const fleet = fleetConfig({ workers: Number(values.workers ?? 8), blockSize: Number(values['block-size'] ?? 512) });
const policies = values.policies ?? DEFAULT_POLICIES;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const text = readFileSync(path, 'utf8');
let t = performance.now();
const trace = parseTrace(text);
const parseMs = performance.now() - t;

/** The engine model and event loop alone: every request to rank i % W, no core, no index. */
function baseline(): number {
  const t0 = performance.now();
  const clock = new VirtualClock();
  const events = new EventQueue(clock);
  const sink: KvEventSink = { stored: () => {}, removed: () => {} };
  const noop = (): void => {};
  const ids = new BlockIds(trace, fleet.blockSize);
  const params = engineParams(fleet);
  const engines = Array.from({ length: fleet.workers }, (_, w) => new SimEngine(BigInt(w), 0, params, events, sink,
    { prefillComplete: noop, outputBlock: noop, finished: noop }, w));
  for (let i = 0; i < trace.length; i++) {
    const at = trace.timestamps[i];
    while (events.peekTime() <= at) events.runNext();
    clock.t = at;
    engines[i % fleet.workers].arrive(newRequest(i, ids.isl(i), trace.outputLength[i], ids.keys(i, []), at));
  }
  while (events.runNext());
  return performance.now() - t0;
}

console.log(`trace ${path}: ${trace.length} requests, parsed in ${parseMs.toFixed(0)} ms`);
console.log(`fleet: ${fleet.workers} workers, block ${fleet.blockSize}, KV ${fleet.capacityBlocks} blocks/rank; policies ${policies}; ${repeat} runs\n`);
const walls = new Map<string, number[]>();
const totals: number[] = [];
const base: number[] = [];
let hits = new Map<string, number>();
for (let k = 0; k < repeat; k++) {
  base.push(baseline());
  t = performance.now();
  const res = await simulate(trace, { fleet, policies, seed: 1 });
  totals.push(performance.now() - t);
  hits = new Map(res.policies.map((p) => [p.policy, p.hit_rate]));
  for (const p of res.policies) walls.set(p.policy, [...(walls.get(p.policy) ?? []), p.wall_ms]);
}
console.log('| case | wall s (median) | runs | hit rate |');
console.log('|---|---|---|---|');
console.log(`| baseline: engine model + event loop, no core (${fleet.workers} ranks) | ${(median(base) / 1000).toFixed(2)} | ${base.map((x) => (x / 1000).toFixed(2)).join(', ')} | - |`);
for (const [name, ws] of walls) {
  console.log(`| ${name} | ${(median(ws) / 1000).toFixed(2)} | ${ws.map((x) => (x / 1000).toFixed(2)).join(', ')} | ${((hits.get(name) ?? 0) * 100).toFixed(1)}% |`);
}
console.log(`| **all ${walls.size} policies** | **${(median(totals) / 1000).toFixed(2)}** | ${totals.map((x) => (x / 1000).toFixed(2)).join(', ')} | |`);
