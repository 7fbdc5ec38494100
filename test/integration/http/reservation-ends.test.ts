/**
 * A lifecycle call on a reservation whose booking ended answers 404 (Dynamo's status) saying how
 * it ended — freed, expired, released with its worker or one of its ranks — for the expiry window
 * (`DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS`); after it, and for ids never booked, `not found`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks, type Server } from './server.js';
import { ManualClock } from '../../support/log-capture.js';

/** prefill_complete, output_block and DELETE of `id` all answer 404 `{"error": message}`. */
async function allGone(s: Server, id: string, message: string): Promise<void> {
  for (const [method, path, body] of [['POST', `/reservations/${id}/prefill_complete`, undefined],
    ['POST', `/reservations/${id}/output_block`, {}], ['DELETE', `/reservations/${id}`, undefined]] as const) {
    const r = await s.call(method, path, body);
    assert.deepEqual([r.status, r.body], [404, { error: message }], `${method} ${path}`);
  }
}

const book = async (s: Server, id: string, extra: Record<string, unknown> = {}): Promise<void> => {
  const r = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: id, token_ids: toks(8), ...extra });
  assert.equal(r.status, 200, r.text);
};

test('a booking released by DELETE /workers answers that its worker was removed', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.worker(2);
  await book(s, 'on-1', { pinned_worker: { worker_id: 1, dp_rank: 0 } });
  await book(s, 'on-2', { pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.equal((await s.call('DELETE', '/workers/1')).status, 200);
  await allGone(s, 'on-1', 'reservation on-1 was freed when its worker 1 was removed');
  // the other worker's booking is untouched
  assert.equal((await s.call('POST', '/reservations/on-2/prefill_complete')).status, 200);
  assert.equal((await s.call('DELETE', '/reservations/on-2')).status, 200);
  await allGone(s, 'on-2', 'reservation on-2 was already freed');
  await allGone(s, 'never', 'reservation never not found');
});

test('a booking on a rank a PATCH removed, or of a worker re-registered elsewhere, says so', async (t) => {
  const s = await startServer(t);
  await s.worker(7, { data_parallel_size: 2 });
  await s.worker(8);
  await book(s, 'rank-1', { pinned_worker: { worker_id: 7, dp_rank: 1 } });
  await book(s, 'rank-0', { pinned_worker: { worker_id: 7, dp_rank: 0 } });
  await book(s, 'moved', { pinned_worker: { worker_id: 8, dp_rank: 0 } });
  assert.equal((await s.call('PATCH', '/workers/7', { data_parallel_size: 1 })).status, 200);
  await allGone(s, 'rank-1', 'reservation rank-1 was freed when dp_rank 1 of its worker 7 was removed');
  assert.equal((await s.call('POST', '/reservations/rank-0/prefill_complete')).status, 200, 'rank 0 kept its booking');
  await s.worker(8, { routing_group: 'elsewhere' });
  await allGone(s, 'moved', 'reservation moved was freed when its worker 8 left the partition (re-registered)');
});

test('an expired booking says it expired after the expiry window; the cause is kept for that window, then forgotten', async (t) => {
  const clock = new ManualClock();
  const s = await startServer(t, { DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS: '120' }, (b) => b.clock(clock));
  await s.worker(1);
  await book(s, 'old');
  await book(s, 'again');
  assert.equal((await s.call('DELETE', '/reservations/again')).status, 200);
  // the id booked again after its free is live again, then freed again
  await book(s, 'again');
  assert.equal((await s.call('POST', '/reservations/again/prefill_complete')).status, 200);
  clock.t = 121_000; // past the expiry window: the next operation's maintenance sweep frees the booking
  await allGone(s, 'old', 'reservation old expired after 120 s without being freed');
  clock.t = 121_000 + 120_000; // exactly the window later: still remembered
  await allGone(s, 'old', 'reservation old expired after 120 s without being freed');
  clock.t += 1; // then forgotten: memory of ended ids is bounded by the window
  await allGone(s, 'old', 'reservation old not found');
});
