/** Finding unknown body fields against a route's request schema, and the closest-field suggestion. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findUnknownFields, knownFields } from '../../../src/http/unknown-fields.js';
import { closeName } from '../../../src/service/unknown-fields.js';
import { SelectRequestSchema, WorkerRequestSchema } from '../../../src/core/wire/schemas.js';

const unknownOf = (schema: Parameters<typeof knownFields>[0], body: Record<string, unknown>): string[] => {
  const out: string[] = [];
  findUnknownFields(body, knownFields(schema)!, (f) => out.push(f));
  return out;
};

test('the top level and the nested objects whose fields the schema lists; maps and lists are not looked into', () => {
  assert.deepEqual(unknownOf(SelectRequestSchema, { model_name: 'm', token_ids: [1] }), []);
  assert.deepEqual(unknownOf(SelectRequestSchema, {
    modelName: 'm', session_context: { session_id: 's', agent_headers: { anything: ['x'] }, extra: 1 },
    mm_routing_info: { routing_token_ids: [1], block_mm_infos: [{ mm_objects: [], odd: 1 }], odd: 2 },
    routing_constraints: { preferred_taints: { any: 1 } }, router_config_override: null, affinity_target: 5,
  }), ['modelName', 'session_context.extra', 'mm_routing_info.odd']);
  assert.deepEqual(unknownOf(WorkerRequestSchema, { worker_id: 1, topology_domains: { zone: 'a' }, kv_events_endpoints: { 0: 'x' } }), []);
});

test('closest known field: case, _ and - ignored, at most two edits or the one field a name begins, never a far-fetched one', () => {
  const known = ['model_name', 'routing_group', 'token_ids', 'block_hashes', 'isl_tokens', 'selection_id'];
  assert.equal(closeName('modelName', known), 'model_name');
  assert.equal(closeName('token_id', known), 'token_ids');
  assert.equal(closeName('Routing-Group', known), 'routing_group');
  assert.equal(closeName('selectionID', known), 'selection_id');
  assert.equal(closeName('tokens', known), 'token_ids');
  assert.equal(closeName('prompt', known), undefined);
  assert.equal(closeName('model', known), 'model_name', 'OpenAI\'s name: the one field that begins with model_');
  assert.equal(closeName('Selection', known), 'selection_id');
  assert.equal(closeName('block', [...known, 'block_size']), undefined, 'two fields begin with block_: no guess');
  assert.equal(closeName('id', known), undefined, 'a short name is not matched by edits alone');
  assert.equal(closeName('x', []), undefined);
});
