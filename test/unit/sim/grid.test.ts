/**
 * The grid in one thread (src/sim/grid.ts): every family on a small fleet at two loads, the
 * best-of-cell marks, the table and determinism. The worker-thread pool: test/integration/sim.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GRID_METRICS, checkGridSpec, runGridWith } from '../../../src/sim/grid.js';
import { formatGrid, gridJson } from '../../../src/sim/grid-report.js';
import { SMALL_GRID, stable } from './sim-helpers.js';

test('the grid over every family runs, marks the best policy of each cell and prints one table', async () => {
  const progress: number[] = [];
  const g = await runGridWith(SMALL_GRID, undefined, (p) => progress.push(p.done));
  assert.equal(g.saturations.length, 6);
  for (const s of g.saturations) assert.ok(s.saturation.requests_per_s > 0 && s.requests === 150, JSON.stringify(s));
  assert.equal(g.cells.length, 12);
  assert.deepEqual(progress, Array.from({ length: 6 + 24 }, (_, k) => k + 1));
  for (const c of g.cells) {
    assert.deepEqual(c.policies.map((m) => m.policy), ['kv', 'round_robin']);
    assert.ok(c.policies.every((m) => m.requests === 150 && m.index_mismatches === 0));
    for (const m of GRID_METRICS) {
      const vals = c.policies.map(m.of);
      const best = m.higher ? Math.max(...vals) : Math.min(...vals);
      assert.deepEqual(c.best[m.key], c.policies.filter((_, i) => vals[i] === best).map((p) => p.policy), `${c.workload} ${c.load} ${m.key}`);
    }
    const sat = g.saturations.find((s) => s.workload === c.workload)!;
    assert.equal(c.saturation_rps, sat.saturation.requests_per_s);
  }
  // on every family the KV-aware policy reuses at least as much as round robin
  for (const c of g.cells) assert.ok(c.best.hit_rate.includes('kv') || c.workload.startsWith('no_reuse'), `${c.workload} at ${c.load}`);
  const text = formatGrid(g);
  assert.match(text, /^grid: 6 workload\(s\) x 1 fleet\(s\) x 2 load\(s\) x 2 policies, seed 5/);
  assert.match(text, /\nworkload\s+fleet\s+load\s+policy\s+TTFT p50\s+TTFT p90\s+TTFT p99\s+hit\n/);
  assert.equal(text.match(/^doc_qa:requests=150 +2x1 +1\.2 +round_robin /gm)?.length, 1);
  assert.match(text, /best in cells \(of 12\)/);
  assert.ok((text.match(/\*/g)?.length ?? 0) >= 12 * 4);
  const json = gridJson(g) as { cells: unknown[] };
  assert.equal(json.cells.length, 12);
  assert.equal(stable(await runGridWith(SMALL_GRID)), stable(g), 'deterministic');
});

test('a bad grid spec is refused before anything runs', () => {
  assert.throws(() => checkGridSpec({ ...SMALL_GRID, fleets: ['big'] }), /unknown fleet "big"/);
  assert.throws(() => checkGridSpec({ ...SMALL_GRID, workloads: ['chat'] }), /unknown workload "chat"/);
  assert.throws(() => checkGridSpec({ ...SMALL_GRID, loads: [] }), /grid: no loads/);
  assert.throws(() => checkGridSpec({ ...SMALL_GRID, loads: [-1] }), /load must be a positive number/);
  assert.throws(() => checkGridSpec({ ...SMALL_GRID, policies: 'kv,nope' }), /unknown policy "nope"/);
});
