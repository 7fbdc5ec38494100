/**
 * `runGrid`: the simulator's grid (src/sim/grid.ts) on `jobs` worker threads, for the CLI's
 * `simulate --grid --jobs N` and for scripts that tune policy parameters:
 *
 * ```ts
 * import { runGrid } from './build/dist/src/grid-pool.js';
 * const g = await runGrid({ workloads: ['system_prompt', 'doc_qa'], fleets: ['8x1'], loads: [0.6, 0.85],
 *   policies: 'kv,ttft:spread_secs=0' }, { jobs: 2 });
 * g.cells[0].policies[1].ttft_ms.p90;
 * ```
 *
 * Every task is a pure function of its fields, and results are put back in task order, so the
 * result is the same for any `jobs`. Tasks start longest first (most ranks first: a 64-rank
 * fleet's runs take about eight times an 8-rank one's), so the threads finish together.
 */
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { namedFleet } from './sim/fleet.js';
import { runGridWith, runInProcess, setTraceFileReader, type GridExecutor, type GridProgress, type GridResult, type GridSpec, type GridTask, type GridTaskResult } from './sim/grid.js';
import type { ResultMessage } from './grid-worker.js';

// `trace=FILE` workloads: read here, and in each pool thread (grid-worker.ts)
setTraceFileReader((path) => readFileSync(path, 'utf8'));

export interface RunGridOptions {
  /** Worker threads (default 1: in this thread, no pool). */
  jobs?: number;
  onProgress?(p: GridProgress): void;
}

/** Run `spec` on `jobs` threads. */
export async function runGrid(spec: GridSpec, o: RunGridOptions = {}): Promise<GridResult> {
  const jobs = o.jobs ?? 1;
  if (!(Number.isInteger(jobs) && jobs >= 1 && jobs <= 256)) throw new Error(`jobs must be a whole number in 1..256 (got ${jobs})`);
  if (jobs === 1) return runGridWith(spec, runInProcess, o.onProgress);
  const pool = new GridPool(jobs);
  try {
    return await runGridWith(spec, pool.execute, o.onProgress);
  } finally {
    await pool.close();
  }
}

/** Ranks of a task's fleet: its cost, roughly. */
function weight(t: GridTask): number {
  const f = namedFleet(t.fleet);
  return (f.workers ?? 1) * (f.dpRanks ?? 1);
}

class GridPool {
  private readonly workers: Worker[];

  constructor(jobs: number) {
    this.workers = Array.from({ length: jobs }, () => new Worker(new URL('./grid-worker.js', import.meta.url)));
  }

  readonly execute: GridExecutor = (tasks, done) => new Promise((resolve, reject) => {
    const order = tasks.map((_, i) => i).sort((a, b) => weight(tasks[b]) - weight(tasks[a]) || a - b);
    const results = new Array<GridTaskResult>(tasks.length);
    let next = 0, finished = 0, failed = false;
    const fail = (err: Error): void => {
      if (failed) return;
      failed = true;
      for (const w of this.workers) w.removeAllListeners();
      reject(err);
    };
    const feed = (w: Worker): void => {
      if (next < order.length) w.postMessage({ index: order[next], task: tasks[order[next++]] });
    };
    if (tasks.length === 0) { resolve([]); return; }
    for (const w of this.workers) {
      w.removeAllListeners();
      w.on('message', (m: ResultMessage) => {
        if (failed) return;
        if ('error' in m) { fail(new Error(m.error)); return; }
        results[m.index] = m.result;
        done(m.index, m.result);
        if (++finished === tasks.length) { for (const x of this.workers) x.removeAllListeners(); resolve(results); } else feed(w);
      });
      w.on('error', fail);
      w.on('exit', (code) => fail(new Error(`a grid thread exited (code ${code})`)));
      feed(w);
    }
  });

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => { w.removeAllListeners(); return w.terminate(); }));
  }
}
