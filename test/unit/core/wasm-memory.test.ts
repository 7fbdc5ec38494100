import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WasmPrefixIndex } from '../../../src/core/index/wasm-index.js';
import { Tier } from '../../../src/core/index/index-types.js';

// STYLE habit 3: hot exports allocate nothing on the steady state. Each is called 100,000
// times after a warm-up and linear memory must not grow by a single page.
test('hot index exports do not grow wasm memory over 100,000 calls each', () => {
  const ix = new WasmPrefixIndex();
  ix.ensureSlots(64);
  const n = 32;
  const locals = BigUint64Array.from({ length: n }, (_, i) => BigInt(i + 1));
  const exts = new BigUint64Array(n);
  const fill = (round: number, slot: number): void => {
    for (let i = 0; i < n; i++) exts[i] = BigInt(1_000_000 + (round % 7) * 10_000 + slot * 100 + i);
    ix.wasm.writeLocals(locals);
    ix.wasm.writeExts(exts);
  };
  // Slots 0-39 keep holding the chain, so every block has a holder set in its indexed form (more
  // than 8 holders); the cycles below add and drop a 41st holder, sometimes leaf first (holdings
  // stay prefix-closed: the fast match walk) and sometimes root first (orphans: the full walk).
  for (let s = 0; s < 40; s++) { fill(0, s); ix.storeN(s, Tier.Device, false, n); }
  const cycle = (round: number): void => {
    const slot = 40 + (round % 24);
    fill(round, slot);
    ix.storeN(slot, Tier.Device, false, n);
    ix.storeN(slot, Tier.Host, false, n);
    ix.matchN(n);
    ix.credit(8, 16, 512, 1, 0.75, 0.25);
    ix.removeN(slot, Tier.Host, n);
    if (round % 2 === 0) exts.reverse(); // leaf first
    ix.wasm.writeExts(exts);
    ix.removeN(slot, Tier.Device, n / 2);  // root first: the remaining half are orphans
    ix.wasm.writeLocals(locals);
    ix.matchN(n);
    ix.chainExtsN(n, slot);
    ix.wasm.writeExts(exts.subarray(n / 2));
    ix.removeN(slot, Tier.Device, n / 2);
  };
  for (let r = 0; r < 2_000; r++) cycle(r); // warm-up: tables and pools reach their working size
  const before = ix.wasm.memoryBytes();
  for (let r = 0; r < 100_000; r++) cycle(r);
  assert.equal(ix.wasm.memoryBytes(), before);
  assert.equal(ix.orphanCount(), 0);
  // The work was real: the 40 holders still match the whole chain, and a new one joins them.
  fill(1, 63);
  assert.equal(ix.storeN(63, Tier.Device, false, n), n);
  ix.wasm.writeLocals(locals);
  const rows = ix.matchN(n);
  assert.equal(rows, 41);
  for (let i = 0; i < rows; i++) assert.equal(ix.rowDevice()[i], n);
  ix.destroy();
});

test('a fresh module can be used through a view first (scratch set up at construction)', async () => {
  const { Wasm } = await import('../../../src/core/index/wasm.js');
  const w = new Wasm();
  w.setSeed(18446744073709551615n);
  assert.equal(w.seed(), 18446744073709551615n);
});
