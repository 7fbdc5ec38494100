/**
 * The generalization bench's judging (bench/generalization.bench.ts), on saved grids read with
 * `--from`: a setting is judged against the other policies only (never against another `ttft`
 * run the file holds), several files are judged as one set of cells, and a miss is reported.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = fileURLToPath(new URL('../../../bench/generalization.bench.js', import.meta.url));

/** A run's metrics as a saved grid holds them (only what the judging reads). */
const run = (policy: string, p50: number, p90 = 2 * p50, p99 = 3 * p50, hit = 0.5) =>
  ({ policy, hit_rate: hit, ttft_ms: { p50, p90, p99, mean: p50 } });

const grid = (cells: { workload: string; policies: ReturnType<typeof run>[] }[]) =>
  JSON.stringify({ spec: {}, saturations: [], cells: cells.map((c) => ({ ...c, fleet: '8x1', load: 0.6 })) });

function judge(t: { after(fn: () => void): void }, files: string[], variants: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gen-bench-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const paths = files.map((text, i) => { const p = join(dir, `g${i}.json`); writeFileSync(p, text); return p; });
  return execFileSync(process.execPath, [BENCH, '--from', paths.join(','), '--variants', variants], { encoding: 'utf8' });
}

test('a setting is judged against the other policies, not against a ttft run the grid also holds', (t) => {
  // an old ttft run twice as fast as everything: were it one of the others, the setting would miss p50 and p90
  const out = judge(t, [grid([{ workload: 'doc_qa', policies: [run('kv', 10), run('llmd', 12), run('ttft', 5), run('ttft:factor_se=3', 10.1)] }])],
    'ttft:factor_se=3');
  assert.match(out, /cells missing a target: held out 0 of 1; default 0 of 1/);
  assert.match(out, /\| doc_qa \| 8x1 \| 0\.6 \| ttft:factor_se=3 \| 1\.010 \| 1\.010 \| 1\.010 \| 1\.00x \| yes \|/);
});

test('several saved grids are judged as one set of cells; a setting over the bound misses', (t) => {
  const out = judge(t, [
    grid([{ workload: 'doc_qa', policies: [run('kv', 10), run('ttft:factor_se=3', 10)] }]),
    grid([{ workload: 'no_reuse:input=4096', policies: [run('kv', 10), run('ttft:factor_se=3', 10.5)] }]),
  ], 'ttft:factor_se=3');
  assert.match(out, /cells missing a target: held out 1 of 2; default 1 of 2/);
  assert.match(out, /\| no_reuse:input=4096 \| 8x1 \| 0\.6 \| ttft:factor_se=3 \| 1\.050 \| 1\.050 \| 1\.050 \| 1\.00x \| no: p50, p90 \|/);
});
