/** Drops by reason (replica-drops.ts): every one counted, one warning per reason a minute with the count since the last. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DROP_WARN_INTERVAL_MS, ReplicaDrops } from '../../../src/service/replica-drops.js';
import { ManualClock, captureLog } from '../../support/log-capture.js';

test('counted by direction and reason; the first drop of a reason warns at once, then once a minute', () => {
  const log = captureLog(), clock = new ManualClock();
  const d = new ReplicaDrops(log, clock);
  d.received('lost', 5);
  d.received('lost');
  d.sent('send_queue_full');
  clock.t = DROP_WARN_INTERVAL_MS - 1;
  d.received('lost', 2);
  assert.equal(log.warnings(/lost|never arrived/).length, 1);
  clock.t = DROP_WARN_INTERVAL_MS;
  d.received('lost');
  assert.deepEqual(log.warnings(/never arrived/), [
    'replica sync: 5 message(s) dropped on receipt: a peer published them and they never arrived (queue limit or broken connection; anti-entropy repairs them)',
    'replica sync: 4 message(s) dropped on receipt: a peer published them and they never arrived (queue limit or broken connection; anti-entropy repairs them)',
  ]);
  assert.deepEqual(log.warnings(/not sent/), ['replica sync: 1 message(s) not sent: the send queue is full']);
  assert.deepEqual([...d.counts()], [{ direction: 'received', reason: 'lost', count: 9 }, { direction: 'sent', reason: 'send_queue_full', count: 1 }]);
  assert.deepEqual([d.total('received'), d.total('sent')], [9, 1]);
});
