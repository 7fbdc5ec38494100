/**
 * `runGrid` on real worker threads (src/grid-pool.ts): the same result for any number of
 * threads, a failing task fails the grid without leaving threads behind, and a recorded trace
 * (`trace=FILE`) is a workload beside the generated ones.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runGrid } from '../../../src/grid-pool.js';
import { checkGridSpec, runGridWith } from '../../../src/sim/grid.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMALL_GRID, TRACE_PATH, stable } from '../../unit/sim/sim-helpers.js';

test('the grid on 2 and 3 threads equals the grid in one thread', async () => {
  const spec = { ...SMALL_GRID, workloads: SMALL_GRID.workloads.slice(0, 2), fleets: ['2x1', 'mixed'] };
  const one = stable(await runGridWith(spec));
  assert.equal(stable(await runGrid(spec, { jobs: 2 })), one);
  assert.equal(stable(await runGrid(spec, { jobs: 3 })), one);
});

test('a task that fails fails the grid with its message', async () => {
  const spec = { ...SMALL_GRID, workloads: ['no_reuse:requests=100', 'doc_qa:doc_min=9000:doc_max=8000:requests=100'] };
  await assert.rejects(runGrid(spec, { jobs: 2 }), /doc_min 9000 exceeds doc_max 8000/);
  await assert.rejects(runGrid(spec, { jobs: 0 }), /jobs must be a whole number in 1\.\.256/);
});

test('trace=FILE: a recorded trace is a grid workload, replayed as it is on every fleet, the same on any number of threads', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'grid-trace-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'head.jsonl');
  writeFileSync(file, readFileSync(TRACE_PATH, 'utf8').split('\n').slice(0, 200).join('\n'));
  const workload = `trace=${file}`;
  const spec = { ...SMALL_GRID, workloads: [workload, 'no_reuse:requests=100'], fleets: ['2x1', '4x1'], loads: [0.6], policies: 'kv,round_robin' };
  const g = await runGrid(spec, { jobs: 2 });
  const traced = g.saturations.filter((s) => s.workload === workload);
  assert.deepEqual(traced.map((s) => s.requests), [200, 200], 'its 200 requests on both fleets');
  for (const c of g.cells.filter((c) => c.workload === workload)) assert.ok(c.policies.every((m) => m.requests === 200 && m.index_mismatches === 0));
  assert.equal(stable(await runGrid(spec, { jobs: 1 })), stable(g));
  await assert.rejects(runGrid({ ...spec, workloads: [`trace=${join(dir, 'none.jsonl')}`] }, { jobs: 2 }), /grid: workload "trace=.*none\.jsonl": ENOENT/);
  assert.throws(() => checkGridSpec({ ...spec, workloads: ['trace='] }), /names no file/);
});
