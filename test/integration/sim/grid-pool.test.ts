/**
 * `runGrid` on real worker threads (src/grid-pool.ts): the same result for any number of
 * threads, and a failing task fails the grid without leaving threads behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runGrid } from '../../../src/grid-pool.js';
import { runGridWith } from '../../../src/sim/grid.js';
import { SMALL_GRID, stable } from '../../unit/sim/sim-helpers.js';

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
