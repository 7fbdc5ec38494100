/**
 * Sweeps: every policy at every value of one numeric knob (`speed=1,2,4,8`, `load=0.3,0.6,0.85,1.1`,
 * `capacity-blocks=256,512,1024`, ...), a table of the results and the charts of TTFT and hit
 * rate against the swept value. Knob names are the CLI's flag names.
 */
import { simulate, type SimProgress, type SimulationOptions, type SimulationResult } from './simulate.js';
import { profileText, type FleetConfig } from './fleet.js';
import type { CostKnobs } from './policies.js';
import type { Trace } from './trace.js';
import type { PolicyMetrics } from './metrics.js';

type Setter = (o: SimulationOptions, v: number) => SimulationOptions;
const fleet = (k: keyof FleetConfig): Setter => (o, v) => ({ ...o, fleet: { ...o.fleet, [k]: v } });
const knob = (k: keyof CostKnobs): Setter => (o, v) => ({ ...o, knobs: { ...o.knobs, [k]: v } });

/** The knobs a sweep can vary, by flag name. */
export const SWEEP_KNOBS: Readonly<Record<string, Setter>> = Object.freeze({
  speed: (o, v) => ({ ...o, speed: v, load: undefined }),
  // a fraction of the fleet's measured saturation throughput (measured once per fleet and seed)
  load: (o, v) => ({ ...o, load: v }),
  seed: (o, v) => ({ ...o, seed: v }),
  workers: fleet('workers'),
  'dp-ranks': fleet('dpRanks'),
  'block-size': fleet('blockSize'),
  'capacity-blocks': fleet('capacityBlocks'),
  'max-concurrent': fleet('maxConcurrent'),
  'max-batched-tokens': fleet('maxBatchedTokens'),
  'queue-threshold': (o, v) => ({ ...o, queue: { ...o.queue, threshold: v } }),
  'overlap-score-credit': knob('overlapScoreCredit'),
  'prefill-load-scale': knob('prefillLoadScale'),
  temperature: knob('routerTemperature'),
});

/** `knob=v1,v2,...`; throws an Error naming what is wrong. */
export function parseSweep(spec: string): { knob: string; values: number[] } {
  const eq = spec.indexOf('=');
  const name = eq < 0 ? spec.trim() : spec.slice(0, eq).trim();
  if (!SWEEP_KNOBS[name]) throw new Error(`sweep: unknown knob "${name}" (known: ${Object.keys(SWEEP_KNOBS).join(', ')})`);
  const values = (eq < 0 ? '' : spec.slice(eq + 1)).split(',').map((s) => s.trim()).filter((s) => s !== '')
    .map((s) => (s === 'inf' ? Infinity : Number(s)));
  if (values.length === 0 || values.some((v) => Number.isNaN(v))) throw new Error(`sweep: "${spec}" needs ${name}=number,number,...`);
  return { knob: name, values };
}

export interface SweepResult { knob: string; values: number[]; runs: SimulationResult[] }

/** Progress of a sweep: the value being run and the simulation's own progress. */
export interface SweepProgress extends SimProgress { value: number; valueIndex: number; valueCount: number }

/** Run every policy of `base` at every value of `knob`. */
export async function sweep(trace: Trace, base: SimulationOptions, knobName: string, values: readonly number[],
  onProgress?: (p: SweepProgress) => void): Promise<SweepResult> {
  const set = SWEEP_KNOBS[knobName];
  if (!set) throw new Error(`sweep: unknown knob "${knobName}"`);
  const runs: SimulationResult[] = [];
  for (let k = 0; k < values.length; k++) {
    const value = values[k];
    const o = set(base, value);
    runs.push(await simulate(trace, {
      ...o, onProgress: onProgress && ((p) => onProgress({ ...p, value, valueIndex: k, valueCount: values.length })),
    }));
  }
  return { knob: knobName, values: [...values], runs };
}

/** Columns of the sweep table. */
export const SWEEP_COLUMNS: readonly [string, (m: PolicyMetrics) => string][] = [
  ['hit', (m) => `${(m.hit_rate * 100).toFixed(1)}%`],
  ['TTFT p50', (m) => secs(m.ttft_ms.p50)],
  ['TTFT p90', (m) => secs(m.ttft_ms.p90)],
  ['TTFT p99', (m) => secs(m.ttft_ms.p99)],
  ['TTFT mean', (m) => secs(m.ttft_ms.mean)],
  ['E2E p50', (m) => secs(m.e2e_ms.p50)],
  ['req/s', (m) => m.throughput.requests_per_s.toFixed(2)],
  ['preempt', (m) => String(m.preemptions)],
];

/** Milliseconds below 10 s (whole ms), seconds above. */
function secs(ms: number): string {
  return ms < 10_000 ? `${ms.toFixed(0)}ms` : `${(ms / 1000).toFixed(ms < 100_000 ? 1 : 0)}s`;
}

/** The sweep as an aligned table: one row per (value, policy). */
export function formatSweep(r: SweepResult): string {
  const head = [r.knob, 'policy', ...SWEEP_COLUMNS.map(([h]) => h)];
  const rows = r.runs.flatMap((run, k) => run.policies.map((m) => [String(r.values[k]), m.policy, ...SWEEP_COLUMNS.map(([, f]) => f(m))]));
  const all = [head, ...rows];
  const widths = head.map((_, c) => Math.max(...all.map((row) => row[c].length)));
  const line = (row: string[]): string => row.map((cell, c) => (c <= 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  const f = r.runs[0]?.fleet;
  const sat = r.runs.find((run) => run.saturation)?.saturation;
  const satText = sat ? `; saturation ${sat.requests_per_s.toFixed(2)} req/s (kv)` : '';
  const about = f ? `${r.runs[0].requests} requests, ${f.workers} workers x ${f.dpRanks} rank(s), profile ${profileText(f)}; sweep of ${r.knob}${satText}\n\n` : '';
  return about + [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n') + '\n';
}
