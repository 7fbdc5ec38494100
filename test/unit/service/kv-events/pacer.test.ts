import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pacer } from '../../../../src/service/kv-events/pacer.js';

const busy = (ms: number): void => { const end = performance.now() + ms; while (performance.now() < end) { /* work */ } };

test('busy listeners yield to the event loop between turns and take turns fairly', async () => {
  const pacer = new Pacer(1);
  const log: string[] = [];
  const listener = async (name: string): Promise<void> => {
    for (let i = 0; i < 20; i++) {
      await pacer.turn(); // messages are always ready: without the pacer this never leaves the microtask queue
      busy(0.3);
      log.push(name);
    }
  };
  let probeAt = -1;
  setImmediate(() => { probeAt = log.length; }); // a selection request arriving now
  await Promise.all([listener('a'), listener('b')]);
  assert.ok(probeAt >= 0 && probeAt < 40, `the probe ran while the listeners were busy (after ${probeAt} messages)`);
  const firstB = log.indexOf('b'), lastA = log.lastIndexOf('a');
  assert.ok(firstB < lastA, 'b got turns before a finished');
  assert.equal(log.length, 40);
});

test('a batch continued with resume() goes before every listener already waiting', async () => {
  const pacer = new Pacer(0.05);
  const log: string[] = [];
  busy(0.1); // this turn's budget is spent
  const waiting = [pacer.turn().then(() => log.push('b')), pacer.turn().then(() => log.push('c'))];
  const resumed = pacer.resume().then(() => log.push('a'));
  assert.equal(pacer.spent(), true);
  await Promise.all([...waiting, resumed]);
  assert.deepEqual(log, ['a', 'b', 'c']);
});
