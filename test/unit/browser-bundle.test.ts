/**
 * The `select-service/browser` bundle (build/browser/select-service.js): minified, at most 320 KB
 * (300 KB in issue 17; the peer routers' policies of issue 27 add ~4 KB each), and still the whole core — the wasm embedded, zod's validation with its English
 * messages, a selection booked and freed — loaded as the ES module a page would load.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// compiled to build/dist/test/unit/: four levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const BUNDLE = join(root, 'build/browser/select-service.js');

test('the browser bundle is at most 320 KB and validates, selects and books like the core', async () => {
  const bytes = statSync(BUNDLE).size;
  assert.ok(bytes <= 320 * 1024, `${bytes} bytes`);
  const m = await import(pathToFileURL(BUNDLE).href) as typeof import('../../src/browser.js');
  const core = m.SelectionCore.newLocal(m.parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }), { rng: m.seededRng(3) });
  assert.throws(() => core.upsertWorker({ worker_id: 'one', model_name: 'm' }),
    (e: unknown) => e instanceof m.SelectionError && e.status === 422 && /worker_id: expected an unsigned 64-bit integer \(got "one"\)/.test(e.message));
  core.upsertWorker({ worker_id: 18446744073709551615n, model_name: 'm', endpoint: 'http://w', block_size: 4 });
  const pick = await core.selectAndReserve({ model_name: 'm', selection_id: 's', token_ids: [1, 2, 3, 4, 5, 6, 7, 8] });
  assert.equal(pick.worker_id, 18446744073709551615n);
  assert.equal(m.stringifyJson({ id: pick.worker_id }), '{"id":18446744073709551615}');
  assert.deepEqual(core.freeReservation('s'), { status: 'ok' });
});
