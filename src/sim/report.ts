/**
 * Plain-text report of a simulation: one row per policy, the columns the issue asks for. Used by
 * the CLI; isomorphic so any host can print the same table.
 */
import type { SimulationResult } from './simulate.js';
import type { PolicyMetrics } from './metrics.js';

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
    + `profile ${f.profile}${f.stepCost ? ' (modified)' : ''}, max ${f.maxConcurrent} running, ${f.maxBatchedTokens} tokens/step, `
    + `speed x${r.speed}, seed ${r.seed}`;
  const rows = [REPORT_COLUMNS.map(([h]) => h), ...r.policies.map((m) => REPORT_COLUMNS.map(([, f]) => f(m)))];
  const widths = REPORT_COLUMNS.map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]): string => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  return [head, '', line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n') + '\n';
}

/** The result as JSON-ready data (Infinity capacity as null). */
export function reportJson(r: SimulationResult): unknown {
  return { ...r, fleet: { ...r.fleet, capacityBlocks: Number.isFinite(r.fleet.capacityBlocks) ? r.fleet.capacityBlocks : null } };
}
