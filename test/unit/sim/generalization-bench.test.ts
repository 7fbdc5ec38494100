/**
 * The generalization bench's judging (bench/generalization.bench.ts), on saved grids read with
 * `--from`: a setting is judged against the other policies only (never against another `ttft`
 * run the file holds), several files are judged as one set of cells, and a miss is reported; a
 * setting run against a saved baseline is saved joined to it (judged alone, it judges the same).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
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
  return execFileSync(process.execPath, [BENCH, '--from', paths.join(','), '--variants', variants], { encoding: 'utf8', stdio: 'pipe' });
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
  // 2% over on p50 and p90 each: 0.030 + 0.030
  assert.match(out, /cells missed and loss per setting on all cells: ttft:factor_se=3 1, 0\.060/);
});

test('a setting run with --baseline is saved beside the baseline\'s other policies: --from judges that file alone the same', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gen-bench-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const workload = 'no_reuse:requests=200';
  const saturation = { requests_per_s: 40, base_rps: 40, saturated: true, passes: [] };
  // a stale ttft run in the baseline (p50 1 ms): the new run replaces it
  const base = { spec: {}, saturations: [{ workload, fleet: '8x1', requests: 200, saturation }],
    cells: [{ workload, fleet: '8x1', load: 0.6, speed: 1, saturation_rps: 40, policies: [run('kv', 1000), run('llmd', 2000), run('ttft', 1)], best: {} }] };
  const basePath = join(dir, 'base.json'), saved = join(dir, 'joined.json');
  writeFileSync(basePath, JSON.stringify(base));
  const ran = execFileSync(process.execPath, [BENCH, '--baseline', basePath, '--variants', 'ttft', '--save', saved, '--jobs', '1'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const joined = JSON.parse(readFileSync(saved, 'utf8')) as { cells: { policies: { policy: string; requests?: number; ttft_ms: { p50: number } }[]; best: Record<string, string[]> }[] };
  const runs = joined.cells[0].policies;
  assert.deepEqual(runs.map((m) => m.policy), ['kv', 'llmd', 'ttft'], 'the baseline\'s other policies, then the setting\'s new run');
  assert.equal(runs[0].ttft_ms.p50, 1000, 'the baseline\'s run as it was');
  assert.equal(runs[2].requests, 200, 'a real run of the workload');
  assert.ok(runs[2].ttft_ms.p50 > 1, 'not the stale run');
  assert.deepEqual(joined.cells[0].best.ttft_p50, ['ttft'], 'the best of the joined runs');
  const fromSaved = execFileSync(process.execPath, [BENCH, '--from', saved, '--variants', 'ttft'], { encoding: 'utf8' });
  assert.equal(fromSaved, ran);
});

test('--help prints the usage; a grid without kv\'s runs is refused by name', (t) => {
  assert.match(execFileSync(process.execPath, [BENCH, '--help'], { encoding: 'utf8' }), /^usage: .*generalization\.bench\.js/);
  assert.throws(() => judge(t, [grid([{ workload: 'doc_qa', policies: [run('llmd', 10), run('ttft', 10)] }])], 'ttft'),
    (e: Error & { stderr?: string }) => /no run of kv in doc_qa 8x1 0\.6/.test(String(e.stderr)));
});
