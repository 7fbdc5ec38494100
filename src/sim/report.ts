/**
 * Plain-text report of a simulation: one row per policy, the columns the issue asks for. Used by
 * the CLI; isomorphic so any host can print the same table.
 */
import type { SimulationResult } from './simulate.js';
import type { PolicyMetrics } from './metrics.js';
import { profileText } from './fleet.js';

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const ms = (x: number): string => (x >= 10_000 ? `${(x / 1000).toFixed(0)}s` : x >= 1000 ? `${(x / 1000).toFixed(1)}s` : `${x.toFixed(0)}ms`);
const num = (x: number, d = 1): string => x.toFixed(d);

/** Columns of the report: header and cell text of a policy's metrics (the page shows the same). */
export const REPORT_COLUMNS: readonly [string, (m: PolicyMetrics) => string][] = [
  ['policy', (m) => m.policy],
  ['hit', (m) => pct(m.hit_rate)],
  ['block hit', (m) => pct(m.block_hit_rate)],
  ['TTFT p50/p90/p99', (m) => `${ms(m.ttft_ms.p50)}/${ms(m.ttft_ms.p90)}/${ms(m.ttft_ms.p99)}`],
  ['E2E p50/p90/p99', (m) => `${ms(m.e2e_ms.p50)}/${ms(m.e2e_ms.p90)}/${ms(m.e2e_ms.p99)}`],
  ['wait p50/p99', (m) => `${ms(m.queue_wait_ms.p50)}/${ms(m.queue_wait_ms.p99)}`],
  ['router wait p99', (m) => ms(m.router_wait_ms.p99)],
  ['req/s', (m) => num(m.throughput.requests_per_s, 2)],
  ['out tok/s', (m) => num(m.throughput.output_tokens_per_s, 0)],
  ['imbalance', (m) => num(m.load_imbalance.mean, 2)],
  ['evicted', (m) => String(m.evicted_blocks)],
  ['preempt', (m) => String(m.preemptions)],
  ['wall', (m) => ms(m.wall_ms)],
];

/** The metrics table, aligned, with a header line describing the run. */
export function formatReport(r: SimulationResult): string {
  const f = r.fleet;
  const cap = Number.isFinite(f.capacityBlocks) ? `${f.capacityBlocks} blocks` : 'unbounded';
  const head = `${r.requests} requests, ${f.workers} workers x ${f.dpRanks} rank(s), block ${f.blockSize}, KV ${cap}/rank, `
    + `profile ${profileText(f)}${f.stepCost ? ' (modified)' : ''}, max ${f.maxConcurrent} running, ${f.maxBatchedTokens} tokens/step, `
    + `${r.saturation ? `${loadText(r)}, ` : ''}speed x${Number(r.speed.toPrecision(4))}, seed ${r.seed}`;
  const rows = [REPORT_COLUMNS.map(([h]) => h), ...r.policies.map((m) => REPORT_COLUMNS.map(([, f]) => f(m)))];
  const widths = REPORT_COLUMNS.map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]): string => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  return [head, '', line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n') + '\n';
}

/** `load 0.85 of saturation 125.70 req/s (kv, measured)`: what a load-driven run's speed comes from. */
export function loadText(r: SimulationResult): string {
  const s = r.saturation;
  if (!s) return '';
  const how = s.passes.length === 0 ? 'given' : s.saturated ? `kv, ${s.passes.length} passes` : `kv, not reached in ${s.passes.length} passes: a lower bound`;
  return `load ${r.load} of saturation ${s.requests_per_s.toFixed(2)} req/s (${how})`;
}

/** The result as JSON-ready data (Infinity capacity as null). */
export function reportJson(r: SimulationResult): unknown {
  return jsonReady(r);
}

/** `x` as plain JSON data, Infinity (unbounded capacities) as null. */
export function jsonReady(x: unknown): unknown {
  return JSON.parse(JSON.stringify(x, (_k, v: unknown) => (v === Infinity ? null : v))) as unknown;
}

/** Numeric columns of the CSV export (ms for times). */
const CSV_COLUMNS: readonly [string, (m: PolicyMetrics) => number][] = [
  ['hit_rate', (m) => m.hit_rate], ['block_hit_rate', (m) => m.block_hit_rate],
  ['ttft_p50_ms', (m) => m.ttft_ms.p50], ['ttft_p90_ms', (m) => m.ttft_ms.p90], ['ttft_p99_ms', (m) => m.ttft_ms.p99], ['ttft_mean_ms', (m) => m.ttft_ms.mean],
  ['e2e_p50_ms', (m) => m.e2e_ms.p50], ['e2e_p90_ms', (m) => m.e2e_ms.p90], ['e2e_p99_ms', (m) => m.e2e_ms.p99],
  ['wait_p50_ms', (m) => m.queue_wait_ms.p50], ['wait_p99_ms', (m) => m.queue_wait_ms.p99], ['router_wait_p99_ms', (m) => m.router_wait_ms.p99],
  ['requests_per_s', (m) => m.throughput.requests_per_s], ['output_tokens_per_s', (m) => m.throughput.output_tokens_per_s],
  ['load_imbalance', (m) => m.load_imbalance.mean], ['evicted_blocks', (m) => m.evicted_blocks], ['preemptions', (m) => m.preemptions],
  ['requests', (m) => m.requests],
];

const csvCell = (s: string): string => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/**
 * The results as CSV, one row per policy (and per swept value, first column named after the
 * knob, when `knob` is given).
 */
export function resultsCsv(runs: readonly { value?: number; result: SimulationResult }[], knob?: string): string {
  const head = [...(knob ? [knob] : []), 'policy', ...CSV_COLUMNS.map(([h]) => h)];
  const rows = runs.flatMap(({ value, result }) => result.policies.map((m) =>
    [...(knob ? [String(value)] : []), csvCell(m.policy), ...CSV_COLUMNS.map(([, f]) => String(Number(f(m).toPrecision(6))))]));
  return [head, ...rows].map((r) => r.join(',')).join('\n') + '\n';
}
