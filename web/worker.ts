/**
 * The simulator's Web Worker: the same isomorphic simulator and wasm core as the CLI, off the
 * page's main thread. Bundled into one classic script and started from a blob URL, so the page
 * also works when opened from the file system. The page cancels a run by terminating it.
 */
import { parseTrace } from '../src/sim/trace.js';
import { generateWorkload } from '../src/sim/workload/spec.js';
import { DEFAULT_FLEET, fleetRanks } from '../src/sim/fleet.js';
import { simulate, type SimulationOptions } from '../src/sim/simulate.js';
import { sweep } from '../src/sim/sweep.js';
import { compileScorer } from '../src/sim/custom-scorer.js';
import type { RunRequest, WorkerMessage } from './protocol.js';

interface WorkerScope {
  onmessage: ((ev: MessageEvent<RunRequest>) => void) | null;
  postMessage(m: WorkerMessage): void;
}
const scope = self as unknown as WorkerScope;

scope.onmessage = (ev) => {
  const req = ev.data;
  const t0 = performance.now();
  void (async () => {
    try {
      // a workload's size and rate scale with the fleet's ranks, as with the CLI's --workload
      const ranks = fleetRanks({ workers: req.fleet.workers ?? DEFAULT_FLEET.workers, dpRanks: req.fleet.dpRanks ?? DEFAULT_FLEET.dpRanks });
      const trace = req.workload ? generateWorkload(req.workload, { seed: req.seed, scale: ranks / 8 }) : parseTrace(req.trace, { limit: req.limit });
      const opts: SimulationOptions = {
        fleet: req.fleet, policies: req.policies, knobs: req.knobs, seed: req.seed, speed: req.speed, load: req.load, queue: req.queue,
        expectedOutput: req.expectedOutput,
        scorer: req.scorer ? compileScorer(req.scorer) : undefined, progressEvery: 250,
      };
      if (req.sweep) {
        const s = await sweep(trace, opts, req.sweep.knob, req.sweep.values, (progress) => scope.postMessage({ type: 'progress', progress }));
        scope.postMessage({ type: 'swept', sweep: s, requests: trace.length, wallMs: performance.now() - t0 });
        return;
      }
      const result = await simulate(trace, {
        ...opts, onProgress: (p) => scope.postMessage({ type: 'progress', progress: { ...p, valueIndex: 0, valueCount: 1 } }),
      });
      scope.postMessage({ type: 'done', result, requests: trace.length, wallMs: performance.now() - t0 });
    } catch (err) {
      scope.postMessage({ type: 'error', message: err instanceof Error ? err.message : String(err) });
    }
  })();
};
