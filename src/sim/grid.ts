/**
 * The grid: workload families x fleets x loads x policies, one simulation per (workload, fleet,
 * load, policy), and one table of TTFT p50/p90/p99 and hit rate with the best policy of each
 * cell marked. `simulate --grid` prints it; `runGrid` (src/grid-pool.ts) runs it on worker
 * threads for scripts (parameter tuning).
 *
 * The work is a list of independent tasks, each a pure function of its fields (the workload is
 * generated from its spec, the fleet's ranks and the seed inside the task): first one saturation
 * measurement per (workload, fleet), then every run, given the saturation it loads against. So
 * results are the same whatever runs the tasks and in whatever order (isomorphic; the Node pool
 * is only an executor).
 */
import { compileScorer } from './custom-scorer.js';
import { fleetConfig, fleetRanks, namedFleet, type FleetConfig } from './fleet.js';
import type { PolicyMetrics } from './metrics.js';
import { parsePolicies, type CostKnobs } from './policies.js';
import { measureSaturation, type Saturation } from './saturation.js';
import { simulate } from './simulate.js';
import { parseTrace, type Trace } from './trace.js';
import { expectedOutputOf, type ExpectedOutput } from './run.js';
import { generateWorkload, parseWorkload } from './workload/spec.js';

/** What a grid runs. */
export interface GridSpec {
  /**
   * Workload specs (`NAME[:key=value...]`), or `trace=FILE`: a recorded JSONL trace (Mooncake's
   * format, as `simulate --trace` reads) replayed as it is on every fleet (its requests do not
   * scale with the ranks), in a grid run with Node (src/grid-pool.ts reads the file).
   */
  workloads: readonly string[];
  /** Fleet names (`8x1`, `16x2`, `64x1`, `mixed`, any `WxR`). */
  fleets: readonly string[];
  /** Loads, fractions of each (workload, fleet)'s saturation throughput. */
  loads: readonly number[];
  /** Comma-separated policy specs. */
  policies: string;
  seed?: number;
  knobs?: Partial<CostKnobs>;
  /** Body of the `custom` policy's scorer. */
  scorer?: string;
  queue?: { threshold: number; policy?: 'fcfs' | 'wspt' | 'lcfs' };
  /** What the simulated clients send as `expected_output_tokens` (default `trace`). */
  expectedOutput?: ExpectedOutput;
  /**
   * Saturations already measured, by `workload@fleet` (a grid's `saturations`): given, they are
   * used instead of measured again (a script comparing new policies against a saved grid).
   */
  saturations?: Readonly<Record<string, Saturation>>;
  /** Engine settings applied to every fleet (capacityBlocks, maxBatchedTokens, ...). */
  fleet?: Partial<Omit<FleetConfig, 'workers' | 'dpRanks' | 'kinds'>>;
}

/** One unit of work. */
export type GridTask =
  | { kind: 'saturation'; spec: GridSpec; workload: string; fleet: string }
  | { kind: 'run'; spec: GridSpec; workload: string; fleet: string; load: number; policy: string; saturation: number };

/** A run's metrics without the per-sample series and histogram (a grid keeps thousands). */
export type CellMetrics = Omit<PolicyMetrics, 'series' | 'ttft_histogram'>;

export type GridTaskResult =
  | { kind: 'saturation'; requests: number; saturation: Saturation }
  | { kind: 'run'; speed: number; metrics: CellMetrics };

/** Runs tasks (in any order, on any threads) and reports each as it completes. */
export type GridExecutor = (tasks: readonly GridTask[], done: (index: number, r: GridTaskResult) => void) => Promise<GridTaskResult[]>;

export interface GridProgress { done: number; total: number; task: GridTask; result: GridTaskResult }

/** The metrics the table compares, and which way is better. */
export const GRID_METRICS: readonly { key: string; head: string; of: (m: CellMetrics) => number; higher?: boolean }[] = [
  { key: 'ttft_p50', head: 'TTFT p50', of: (m) => m.ttft_ms.p50 },
  { key: 'ttft_p90', head: 'TTFT p90', of: (m) => m.ttft_ms.p90 },
  { key: 'ttft_p99', head: 'TTFT p99', of: (m) => m.ttft_ms.p99 },
  { key: 'hit_rate', head: 'hit', of: (m) => m.hit_rate, higher: true },
];

export interface GridCell {
  workload: string;
  fleet: string;
  load: number;
  /** Arrival speed-up that gives this load. */
  speed: number;
  saturation_rps: number;
  policies: CellMetrics[];
  /** Per metric key of {@link GRID_METRICS}: the policies with the best value (ties all). */
  best: Record<string, string[]>;
}

export interface GridResult {
  spec: GridSpec;
  saturations: { workload: string; fleet: string; requests: number; saturation: Saturation }[];
  cells: GridCell[];
}

/** Throws an Error naming the first bad part of `spec`. */
export function checkGridSpec(spec: GridSpec): void {
  for (const [name, list] of [['workloads', spec.workloads], ['fleets', spec.fleets], ['loads', spec.loads]] as const) {
    if (list.length === 0) throw new Error(`grid: no ${name}`);
  }
  for (const w of spec.workloads) {
    const file = traceFileOf(w);
    if (file === null) parseWorkload(w);
    else if (file === '') throw new Error(`grid: workload "${w}" names no file (trace=FILE)`);
  }
  for (const f of spec.fleets) fleetConfig({ ...spec.fleet, ...namedFleet(f) });
  for (const l of spec.loads) if (!(l > 0 && Number.isFinite(l))) throw new Error(`grid: load must be a positive number (got ${l})`);
  parsePolicies(spec.policies);
  expectedOutputOf(spec.expectedOutput, 'grid: expectedOutput');
}

/** A fleet of the grid: the named fleet with the grid's engine settings. */
function gridFleet(spec: GridSpec, name: string): FleetConfig {
  return fleetConfig({ ...spec.fleet, ...namedFleet(name) });
}

/** The last workloads generated in this thread (a task of the same workload and fleet reuses it). */
const traces = new Map<string, Trace>();

/** The file of a `trace=FILE` workload, or null for a generated one. */
export function traceFileOf(workload: string): string | null {
  const w = workload.trim();
  return w.startsWith('trace=') ? w.slice('trace='.length).trim() : null;
}

/** Reads a trace file's text (set by the Node side: this module imports no `node:` module). */
let readTraceFile: ((path: string) => string) | null = null;
export function setTraceFileReader(read: (path: string) => string): void { readTraceFile = read; }

function traceFile(workload: string, file: string): Trace {
  if (!readTraceFile) throw new Error(`grid: workload "${workload}" needs a file reader (run the grid with src/grid-pool.ts)`);
  try {
    return parseTrace(readTraceFile(file));
  } catch (err) {
    throw new Error(`grid: workload "${workload}": ${(err as Error).message}`);
  }
}

/** The workload of `name` for `fleet`: its scaled defaults follow the fleet's ranks (/ 8); a trace file as it is. */
export function gridTrace(spec: GridSpec, workload: string, fleet: FleetConfig): Trace {
  const file = traceFileOf(workload);
  const key = JSON.stringify(file === null ? [workload, fleetRanks(fleet), spec.seed ?? 0] : [workload]);
  let t = traces.get(key);
  if (!t) {
    t = file === null ? generateWorkload(workload, { seed: spec.seed ?? 0, scale: fleetRanks(fleet) / 8 }) : traceFile(workload, file);
    if (traces.size >= 4) traces.delete(traces.keys().next().value as string);
    traces.set(key, t);
  }
  return t;
}

/** Run one task (what a pool thread calls). */
export async function runGridTask(task: GridTask): Promise<GridTaskResult> {
  const spec = task.spec, fleet = gridFleet(spec, task.fleet);
  const trace = gridTrace(spec, task.workload, fleet);
  if (task.kind === 'saturation') {
    const known = spec.saturations?.[`${task.workload}@${task.fleet}`];
    return { kind: 'saturation', requests: trace.length, saturation: known ?? await measureSaturation(trace, fleet, { seed: spec.seed }) };
  }
  const r = await simulate(trace, {
    fleet, policies: task.policy, seed: spec.seed, knobs: spec.knobs, queue: spec.queue, expectedOutput: spec.expectedOutput, load: task.load, saturation: task.saturation,
    scorer: spec.scorer === undefined ? undefined : compileScorer(spec.scorer),
  });
  const { series: _s, ttft_histogram: _h, ...metrics } = r.policies[0];
  return { kind: 'run', speed: r.speed, metrics };
}

/** Tasks one after another in this thread. */
export const runInProcess: GridExecutor = async (tasks, done) => {
  const out: GridTaskResult[] = [];
  for (let i = 0; i < tasks.length; i++) {
    out.push(await runGridTask(tasks[i]));
    done(i, out[i]);
  }
  return out;
};

/** Run the grid with `execute` (default: in this thread). */
export async function runGridWith(spec: GridSpec, execute: GridExecutor = runInProcess, onProgress?: (p: GridProgress) => void): Promise<GridResult> {
  checkGridSpec(spec);
  const policies = parsePolicies(spec.policies).map((p) => p.label);
  const pairs = spec.workloads.flatMap((workload) => spec.fleets.map((fleet) => ({ workload, fleet })));
  const total = pairs.length * (1 + spec.loads.length * policies.length);
  let done = 0;
  const report = (tasks: readonly GridTask[]) => (i: number, result: GridTaskResult): void => onProgress?.({ done: ++done, total, task: tasks[i], result });
  const satTasks: GridTask[] = pairs.map((p) => ({ kind: 'saturation', spec, ...p }));
  const sats = (await execute(satTasks, report(satTasks))) as Extract<GridTaskResult, { kind: 'saturation' }>[];
  const runTasks: GridTask[] = pairs.flatMap((p, k) => spec.loads.flatMap((load) => policies.map((policy) => (
    { kind: 'run' as const, spec, ...p, load, policy, saturation: sats[k].saturation.requests_per_s }))));
  const runs = (await execute(runTasks, report(runTasks))) as Extract<GridTaskResult, { kind: 'run' }>[];
  const cells: GridCell[] = [];
  for (let c = 0; c < runs.length; c += policies.length) {
    const t = runTasks[c] as Extract<GridTask, { kind: 'run' }>;
    const ms = runs.slice(c, c + policies.length).map((r) => r.metrics);
    cells.push({ workload: t.workload, fleet: t.fleet, load: t.load, speed: runs[c].speed, saturation_rps: t.saturation, policies: ms, best: bestOf(ms) });
  }
  return { spec, saturations: pairs.map((p, k) => ({ ...p, requests: sats[k].requests, saturation: sats[k].saturation })), cells };
}

/** Per metric of {@link GRID_METRICS}, the policies with the best value among `ms` (ties all). */
export function bestOf(ms: readonly CellMetrics[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const g of GRID_METRICS) {
    const vals = ms.map(g.of);
    const best = g.higher ? Math.max(...vals) : Math.min(...vals);
    out[g.key] = ms.filter((_, i) => Math.abs(vals[i] - best) <= 1e-9 * Math.max(1, Math.abs(best))).map((m) => m.policy);
  }
  return out;
}
