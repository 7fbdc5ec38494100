/**
 * The `select-service/browser` bundle (build/browser/select-service.js): minified, at most 300 KB
 * (issue 17), and still the whole core — the wasm embedded, zod's validation with its English
 * messages, a selection booked and freed — loaded as the ES module a page would load. It leaves
 * out one thing: zod's JSON Schema conversion (scripts/bundle-web.mjs says why).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// compiled to build/dist/test/unit/: four levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const BUNDLE = join(root, 'build/browser/select-service.js');

test('the browser bundle is at most 300 KB and validates, selects and books like the core', async () => {
  const bytes = statSync(BUNDLE).size;
  assert.ok(bytes <= 300 * 1024, `${bytes} bytes`);
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

test("the browser bundle leaves out zod's JSON Schema conversion, saying where to get it, and validates without it", async () => {
  const m = await import(pathToFileURL(BUNDLE).href) as typeof import('../../src/browser.js');
  const why = /select-service\/browser leaves out zod's JSON Schema conversion; the service's GET \/openapi.json has/;
  assert.throws(() => m.SelectRequestSchema.toJSONSchema({ io: 'input', unrepresentable: 'any' }), why);
  assert.throws(() => m.WorkerRequestSchema['~standard'].jsonSchema.input({ target: 'draft-2020-12' }), why);
  const ok = m.WorkerRequestSchema['~standard'].validate({ worker_id: 7, model_name: 'm' });
  assert.ok(!(ok instanceof Promise));
  assert.equal(ok.issues, undefined);
  const bad = m.WorkerRequestSchema['~standard'].validate({ worker_id: 'x', model_name: 'm' });
  assert.ok(!(bad instanceof Promise));
  assert.equal(bad.issues?.[0]?.path?.[0], 'worker_id');
  // the same schemas from select-service/core in Node still convert
  const core = await import('../../src/core/index.js');
  assert.equal(core.SelectRequestSchema.toJSONSchema({ io: 'input', unrepresentable: 'any' }).type, 'object');
});
