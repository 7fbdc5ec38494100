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
  const cycle = (round: number): void => {
    const slot = round % 64;
    fill(round, slot);
    ix.storeN(slot, Tier.Device, false, n);
    ix.storeN(slot, Tier.Host, false, n);
    ix.matchN(n);
    ix.credit(8, 16, 512, 1, 0.75, 0.25);
    ix.removeN(slot, Tier.Host, n);
    ix.removeN(slot, Tier.Device, n);
  };
  for (let r = 0; r < 2_000; r++) cycle(r); // warm-up: tables and pools reach their working size
  const before = ix.wasm.memoryBytes();
  for (let r = 0; r < 100_000; r++) cycle(r);
  assert.equal(ix.wasm.memoryBytes(), before);
  // The work was real: a final store is matched by every block.
  fill(1, 3);
  assert.equal(ix.storeN(3, Tier.Device, false, n), n);
  const rows = ix.matchN(n);
  assert.equal(rows, 1);
  assert.equal(ix.rowDevice()[0], n);
  ix.destroy();
});

test('a fresh module can be used through a view first (scratch set up at construction)', async () => {
  const { Wasm } = await import('../../../src/core/index/wasm.js');
  const w = new Wasm();
  w.setSeed(18446744073709551615n);
  assert.equal(w.seed(), 18446744073709551615n);
});
