/**
 * The warning of drains cut at a limit (src/http/lingering-close.ts `warnCuts`): at most one a
 * minute, counting the cuts of each limit since the previous one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { warnCuts } from '../../../src/http/lingering-close.js';
import { ManualClock } from '../../support/log-capture.js';

test('drains cut at a limit: one warning a minute with the counts since the last', () => {
  const warned: Record<string, unknown>[] = [];
  const clock = new ManualClock();
  const cut = warnCuts({ warn: (fields) => warned.push(fields as Record<string, unknown>) }, { bytes: 100, ms: 5 }, 60_000, () => clock.now());
  cut('bytes');
  assert.deepEqual(warned, [{ overBytes: 1, overTime: 0, limitBytes: 100, limitMs: 5 }], 'the first cut is warned about at once');
  clock.t = 10;
  cut('time');
  cut('time');
  clock.t = 59_999;
  cut('bytes');
  assert.equal(warned.length, 1, 'no second warning within the minute');
  clock.t = 60_010;
  cut('time');
  assert.deepEqual(warned[1], { overBytes: 1, overTime: 3, limitBytes: 100, limitMs: 5 }, 'the next one counts every cut in between');
});
