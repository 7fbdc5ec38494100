import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CacheNamespaces, DROP_AMBIGUOUS } from '../../../../src/service/kv-events/namespaces.js';

/** (lo, hi) words of small hashes. */
const words = (...h: number[]): Uint32Array => Uint32Array.from(h.flatMap((v) => [v, 0]));

test('salted chains propagate; removes forget; ambiguity fails closed until the rank is cleared', () => {
  const ns = new CacheNamespaces();
  assert.equal(ns.resolve(0, null, false, 0, 0, words(1), 0, 1), '', 'unsalted root: nothing recorded');
  assert.equal(ns.size(0), 0);
  assert.equal(ns.resolve(0, 'a', false, 0, 0, words(10, 11), 0, 2), 'a');
  assert.equal(ns.resolve(0, null, true, 11, 0, words(12), 0, 1), 'a', 'continuation inherits');
  assert.equal(ns.resolve(1, null, true, 11, 0, words(12), 0, 1), '', 'another rank knows nothing of it');
  assert.equal(ns.size(0), 3);
  ns.removed(0, words(12), 0, 1);
  assert.equal(ns.resolve(0, null, true, 12, 0, words(13), 0, 1), '', 'a removed parent is unknown: unsalted');
  assert.equal(ns.resolve(0, 'b', false, 0, 0, words(10), 0, 1), 'b');
  assert.equal(ns.resolve(0, null, true, 10, 0, words(14), 0, 1), DROP_AMBIGUOUS);
  ns.removed(0, words(10), 0, 1);
  assert.equal(ns.resolve(0, null, true, 10, 0, words(14), 0, 1), DROP_AMBIGUOUS, 'ambiguous entries survive removes');
  ns.resolve(0, null, false, 0, 0, words(11), 0, 1); // an unsalted store of a salted hash
  assert.equal(ns.resolve(0, null, true, 11, 0, words(15), 0, 1), DROP_AMBIGUOUS);
  ns.cleared(0);
  assert.equal(ns.resolve(0, null, true, 10, 0, words(14), 0, 1), '');
  assert.equal(ns.size(0), 0);
});
