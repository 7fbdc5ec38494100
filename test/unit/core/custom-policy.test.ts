/**
 * Custom routing strategies through the SelectionCore (Dynamo `lib/kv-router/src/services/selection/service.rs`, our versions of Dynamo's HTTP
 * custom-policy tests): the factory runs once per partition, filters + scorers + picker compose,
 * and every failure (non-finite cost 500, bad row 500, all filtered 503) books nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, rejects, worker } from './core-helpers.js';
import { PolicyRegistry, type WorkerSelectionPolicy } from '../../../src/core/select/policy.js';

const T = [1, 2, 3, 4];

function coreWith(policy: () => WorkerSelectionPolicy) {
  const partitions: string[] = [];
  const policies = new PolicyRegistry().register('custom', (p) => { partitions.push(`${p.modelName}/${p.routingGroup}`); return policy(); });
  const { core } = makeCore({ DYN_ROUTER_WORKER_SELECTION_POLICY: 'custom' }, { policies });
  for (const id of [1, 2, 3]) core.upsertWorker(worker(id));
  return { core, partitions };
}

const nothingBooked = (core: ReturnType<typeof coreWith>['core'], id: string) => {
  assert.equal(core.loads()[0].loads.reduce((n, l) => n + l.active_requests, 0), 0);
  assert.equal(core.reservations.state(id), undefined);
};

test('the factory runs once per partition; filter, scorer and picker compose (worker 2 chosen)', async () => {
  const { core, partitions } = coreWith(() => ({
    filters: [{ keep: (_ctx, c) => c.worker().workerId !== 1n }],
    scorers: [{ score: (_ctx, cands, out) => cands.forEach((c, i) => { out[i] = c.worker().workerId === 2n ? 0 : 10; }) }],
    picker: { pick: (_ctx, rows) => rows.reduce((best, r, i) => (r.cost() < rows[best].cost() ? i : best), 0) },
  }));
  for (let i = 0; i < 3; i++) assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: `r${i}`, token_ids: T })).worker_id, 2n);
  core.upsertWorker(worker(4, { routing_group: 'other' }));
  await core.select({ model_name: 'model', routing_group: 'other', token_ids: T });
  assert.deepEqual(partitions, ['model/default', 'model/other']);
});

test('a non-finite cost is a 500 naming non-finite; nothing booked', async () => {
  const { core } = coreWith(() => ({ filters: [], scorers: [{ score: (_c, _cs, out) => { out[0] = NaN; } }], picker: { pick: () => 0 } }));
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: T }), 500, /non-finite/);
  nothingBooked(core, 'a');
});

test('a picker row out of range is a 500 naming candidate row; nothing booked', async () => {
  const { core } = coreWith(() => ({ filters: [], scorers: [], picker: { pick: () => 7 } }));
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: T }), 500, /candidate row/);
  nothingBooked(core, 'a');
});

test('a filter that rejects every candidate is a 503; nothing booked', async () => {
  const { core } = coreWith(() => ({ filters: [{ keep: () => false }], scorers: [], picker: { pick: () => 0 } }));
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: T }), 503);
  nothingBooked(core, 'a');
});

test('an unknown policy name is a configuration error of tryNewLocal', () => {
  assert.throws(() => makeCore({ DYN_ROUTER_WORKER_SELECTION_POLICY: 'nope' }), /unknown worker selection policy type "nope"/);
});
