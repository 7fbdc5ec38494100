/**
 * `GET /openapi.json`: an OpenAPI 3.0 document generated from the route table and its zod
 * schemas (`z.toJSONSchema`, target openapi-3.0). Our integer schemas are `z.custom` (they take
 * the u64-exact parser's number-or-bigint values) and responses mark u64 as `z.bigint()`; zod
 * cannot represent either, so {@link describeUnrepresentable} names them: u64 ids and hashes
 * are `integer`/`uint64` with an exact maximum of 18446744073709551615 (the document is written
 * by the u64-exact serializer, so the digits survive), request hash arrays are `int64` (negative
 * values are bit-cast), response `sequence_hashes` are `int64`.
 */
import { z } from 'zod';
import type { RouteDef } from './routes.js';
import { ErrorSchema } from './response-schemas.js';
import { POLICY_CLASS_HEADER } from './request-input.js';
import { U64_MAX } from '../core/wire/json.js';

type Json = Record<string, unknown>;

// zod deep-copies the schema through JSON.stringify, which refuses bigint: the exact bounds
// travel as these markers and are swapped back in by `exactBounds`.
const BOUNDS: Readonly<Record<string, bigint>> = { '<u64 max>': U64_MAX, '<i64 min>': -(1n << 63n) };
const EXACT = 'written as plain JSON digits, never quoted or rounded';
const U64: Json = { type: 'integer', format: 'uint64', minimum: 0, maximum: '<u64 max>', description: `unsigned 64-bit integer, ${EXACT}` };
const I64_IN: Json = {
  type: 'integer', format: 'int64', minimum: '<i64 min>', maximum: '<u64 max>',
  description: `64-bit hash: signed i64 (negative values are bit-cast to u64) or u64, ${EXACT}`,
};
const I64_OUT: Json = { type: 'integer', format: 'int64', description: `u64 hash bit-cast to i64, ${EXACT}` };
const U32: Json = { type: 'integer', format: 'int64', minimum: 0, maximum: 0xffffffff };
const COUNT: Json = { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
const F64: Json = { type: 'number', format: 'double' };
const HASH_FIELDS = new Set(['block_hashes', 'sequence_hashes']);
const STRUCTURAL = new Set(['properties', 'items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'prefixItems']);

/** The field a schema path ends in (`properties.mm_routing_info.properties.routing_token_ids` -> `routing_token_ids`). */
function fieldOf(path: readonly (string | number)[]): string {
  for (let i = path.length - 1; i >= 0; i--) {
    const p = path[i];
    if (typeof p === 'string' && !STRUCTURAL.has(p) && !/^\d+$/.test(p)) return p;
  }
  return '';
}

/**
 * JSON Schema for a schema zod cannot represent. Customs are told apart by what they accept
 * (a probe per kind), arrays of integers by their field name; an unknown kind throws so a new
 * schema cannot silently become `{}` (the OpenAPI test builds the document).
 */
export function describeUnrepresentable(schema: z.core.$ZodType, path: readonly (string | number)[]): Json {
  const field = fieldOf(path);
  const type = schema._zod.def.type;
  if (type === 'bigint') return field === 'sequence_hashes' ? I64_OUT : U64;
  if (type === 'custom') {
    const ok = (v: unknown): boolean => z.safeParse(schema, v).success;
    if (field === 'worker_id') return U64; // WorkerRequest's presence check in front of the u64
    if (ok([])) return { type: 'array', items: HASH_FIELDS.has(field) ? I64_IN : { ...U32, description: 'token id' } };
    if (ok(U64_MAX)) return U64;
    if (ok(0.5)) return F64;
    if (ok(2 ** 32)) return COUNT;
    if (ok(1)) return U32;
  }
  throw new Error(`openapi: no JSON Schema for the ${type} schema at ${path.join('.') || '(root)'}`);
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, {
    io, target: 'openapi-3.0', reused: 'inline',
    unrepresentable: (ctx) => describeUnrepresentable(ctx.zodSchema, ctx.path),
  }) as Json;
  delete out.$schema;
  return out;
}

/** Replaces the bound markers with their bigint values, in place (the document is a fresh tree). */
function exactBounds(v: unknown): unknown {
  if (Array.isArray(v)) v.forEach((x, i) => { v[i] = exactBounds(x); });
  else if (typeof v === 'object' && v !== null) {
    const o = v as Json;
    for (const k of Object.keys(o)) o[k] = (k === 'minimum' || k === 'maximum') && typeof o[k] === 'string' ? BOUNDS[o[k] as string] : exactBounds(o[k]);
  }
  return v;
}

const jsonContent = (schema: Json): Json => ({ 'application/json': { schema } });
const ERROR_REF = { $ref: '#/components/schemas/Error' };

function operation(def: RouteDef): Json {
  const parameters: Json[] = [];
  for (const m of def.url.matchAll(/:(\w+)/g)) {
    const name = m[1];
    parameters.push({ name, in: 'path', required: true, schema: name === 'worker_id' ? { ...U64 } : { type: 'string' } });
  }
  if (def.query) {
    for (const name of ['model_name', 'routing_group']) parameters.push({ name, in: 'query', required: false, schema: { type: 'string' } });
  }
  if (def.policyClassHeader) {
    parameters.push({ name: POLICY_CLASS_HEADER, in: 'header', required: false, schema: { type: 'string' },
      description: 'policy class / queue from router_policy_config (trimmed; empty ignored)' });
  }
  const ok = jsonSchema(def.response, 'output');
  const content = def.responseType ? { [def.responseType]: { schema: ok } } : jsonContent(ok);
  const responses: Json = { [def.status]: { description: 'success', content } };
  const errors: Record<number, string> = { ...def.errors };
  if (def.body === 'json') {
    errors[400] ??= 'invalid JSON';
    Object.assign(errors, { 413: 'body over 8 MiB', 415: 'Content-Type is not application/json' });
  }
  for (const [status, description] of Object.entries(errors)) {
    // `/ready` answers 503 with its usual body; register_peer 200 is a second success.
    const body = Number(status) < 400 || def.url === '/ready' ? ok : ERROR_REF;
    responses[status] = { description, content: jsonContent(body) };
  }
  const op: Json = { summary: def.summary, operationId: `${def.method.toLowerCase()}${def.url.replace(/[/:]+(\w)/g, (_, c: string) => c.toUpperCase())}`, responses };
  if (parameters.length > 0) op.parameters = parameters;
  if (def.request) op.requestBody = { required: true, content: jsonContent(jsonSchema(def.request, 'input')) };
  return op;
}

/** The OpenAPI document of `routes`. */
export function openApiDocument(routes: readonly RouteDef[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const def of routes) {
    const path = def.url.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[def.method.toLowerCase()] = operation(def);
  }
  return exactBounds({
    openapi: '3.0.3',
    info: {
      title: 'select-service', version,
      description: 'KV-cache-aware worker selection for LLM inference (wire-compatible with Dynamo\'s standalone selection service). '
        + 'Errors are {"error": "..."}; unknown routes 404, wrong methods 405. Unknown body fields are ignored.',
    },
    paths,
    components: { schemas: { Error: jsonSchema(ErrorSchema, 'output') } },
  }) as Json;
}

/** The `GET /openapi.json` route over `routes` (the document is built once, on first use). */
export function openApiRoute(routes: readonly RouteDef[], version: string): RouteDef {
  let doc: Json | null = null;
  const self: RouteDef = {
    method: 'GET', url: '/openapi.json', body: 'none', status: 200, summary: 'This OpenAPI document',
    response: z.record(z.string(), z.unknown()), errors: {},
    handle: () => (doc ??= openApiDocument([...routes, self], version)),
  };
  return self;
}
