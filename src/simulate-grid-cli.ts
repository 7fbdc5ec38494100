/**
 * `select-service simulate --grid`: every workload on every fleet at every load under every
 * policy (src/sim/grid.ts), on `--jobs` worker threads (src/grid-pool.ts); one table, or JSON.
 */
import { runGrid } from './grid-pool.js';
import { formatGrid, gridJson } from './sim/grid-report.js';
import { checkGridSpec, type GridProgress, type GridSpec } from './sim/grid.js';
import type { FleetConfig } from './sim/fleet.js';
import { DEFAULT_POLICIES } from './sim/simulate.js';
import { WORKLOAD_NAMES } from './sim/workload/spec.js';
import { wrapText } from './cli-text.js';
import { UsageError, list, number } from './simulate-args.js';

export const GRID_FLEETS = '8x1,16x2,64x1,mixed';
export const GRID_LOADS = '0.3,0.6,0.85,1.1';

export const GRID_USAGE = `grid (--grid): one table of TTFT p50/p90/p99 and hit rate per (workload, fleet, load, policy),
the best of each cell marked *; every run's fleet flags (--capacity-blocks, ...), cost knobs,
--queue-threshold, --scorer, --expected-output and --seed apply to every run
${wrapText(`comma-separated workload specs (default ${WORKLOAD_NAMES.join(',')}), or trace=FILE: a recorded JSONL trace, replayed as it is on every fleet`, '  --workloads LIST          ')}
  --fleets LIST             comma-separated fleet names (default ${GRID_FLEETS})
  --loads LIST              fractions of saturation throughput (default ${GRID_LOADS})
${wrapText(`as above (default ${DEFAULT_POLICIES})`, '  --policies LIST           ')}
  --jobs N                  worker threads (default 1); results are the same for any N
  --json                    print JSON (every run's metrics, the saturations) instead of the table
`;

export const GRID_OPTIONS = {
  grid: { type: 'boolean' }, workloads: { type: 'string' }, fleets: { type: 'string' }, loads: { type: 'string' }, jobs: { type: 'string' },
} as const;

/** What `simulate` parsed that applies to every run of the grid. */
export interface GridCommon {
  fleet: Partial<FleetConfig>;
  knobs: GridSpec['knobs'];
  queue: GridSpec['queue'];
  expectedOutput: GridSpec['expectedOutput'];
  seed: number;
  scorer?: string;
}

interface GridValues {
  workloads?: string; fleets?: string; loads?: string; jobs?: string; policies?: string; json?: boolean;
  trace?: string; workload?: string; speed?: string; load?: string; sweep?: string; svg?: string; 'write-trace'?: string;
}

/** Runs the grid; resolves to the exit code. */
export async function gridMain(values: GridValues, io: { stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown; isTTY?: boolean } },
  common: GridCommon): Promise<number> {
  for (const flag of ['trace', 'workload', 'speed', 'load', 'sweep', 'svg', 'write-trace'] as const) {
    if (values[flag] !== undefined) throw new UsageError(`--grid does not take --${flag} (its workloads, fleets and loads are --workloads, --fleets, --loads)`);
  }
  const { workers, dpRanks, kinds, ...engine } = common.fleet;
  if (workers !== undefined || dpRanks !== undefined || kinds !== undefined) throw new UsageError('--grid takes its fleets from --fleets (not --fleet, --workers, --dp-ranks)');
  const loads = list(values.loads ?? GRID_LOADS).map((v) => number(v, 'loads') as number);
  const spec: GridSpec = {
    workloads: list(values.workloads ?? WORKLOAD_NAMES.join(',')), fleets: list(values.fleets ?? GRID_FLEETS), loads,
    policies: values.policies ?? DEFAULT_POLICIES, seed: common.seed, knobs: common.knobs, queue: common.queue, scorer: common.scorer,
    expectedOutput: common.expectedOutput,
    fleet: engine,
  };
  const jobs = number(values.jobs, 'jobs') ?? 1;
  if (!(Number.isInteger(jobs) && jobs >= 1 && jobs <= 256)) throw new UsageError(`--jobs: a whole number in 1..256 (got ${jobs})`);
  try { checkGridSpec(spec); } catch (err) { throw new UsageError((err as Error).message); }
  const result = await runGrid(spec, { jobs, onProgress: gridProgress(io) });
  if (io.stderr.isTTY) io.stderr.write('\r\x1b[K');
  io.stdout.write(values.json ? `${JSON.stringify(gridJson(result), null, 2)}\n` : formatGrid(result));
  return 0;
}

/** Progress on stderr: a rewritten line on a terminal, a line per finished task otherwise. */
function gridProgress(io: { stderr: { write(s: string): unknown; isTTY?: boolean } }): (p: GridProgress) => void {
  return ({ done, total, task, result }) => {
    const what = task.kind === 'saturation' && result.kind === 'saturation'
      ? `saturation of ${task.workload} on ${task.fleet}: ${result.saturation.requests_per_s.toFixed(2)} req/s`
      : task.kind === 'run' && result.kind === 'run'
        ? `${task.workload} on ${task.fleet} at load ${task.load}, ${task.policy}: TTFT p90 ${result.metrics.ttft_ms.p90.toFixed(0)} ms`
        : '';
    io.stderr.write(io.stderr.isTTY ? `\r\x1b[K[${done}/${total}] ${what}` : `[${done}/${total}] ${what}\n`);
  };
}
