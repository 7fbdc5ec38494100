/**
 * `GET /openapi.json`: an OpenAPI 3.1 document generated from the route table and its zod
 * schemas (`z.toJSONSchema`, JSON Schema 2020-12, the dialect OpenAPI 3.1 uses). Schemas named
 * in {@link COMPONENTS} are written once under `components.schemas` and referenced with `$ref`;
 * anything else is inlined, so a new route or field is documented without touching this file.
 *
 * Our integer schemas are `z.custom` (they take the u64-exact parser's number-or-bigint values)
 * and responses mark u64 as `z.bigint()`; zod cannot represent either, so
 * {@link describeUnrepresentable} names them: u64 ids and hashes are `integer`/`uint64` with an
 * exact maximum of 18446744073709551615 (the document is written by the u64-exact serializer, so
 * the digits survive), request hash arrays are `int64` (negative values are bit-cast), response
 * `sequence_hashes` are `int64`.
 */
import * as z from 'zod';
import type { RouteDef } from './routes.js';
import * as R from './response-schemas.js';
import { POLICY_CLASS_HEADER } from './request-input.js';
import { RouterConfigOverrideSchema } from '../core/config/config.js';
import { U64_MAX } from '../core/wire/json.js';
import {
  BlockExtraInfoSchema, MmObjectSchema, OutputBlockRequestSchema, PeerRequestSchema, PinnedWorkerSchema, PromptQuerySchema,
  ReservationRequestSchema, SelectAndReserveRequestSchema, SelectRequestSchema, SessionContextSchema, WorkerRequestSchema,
  WorkerTargetSchema,
} from '../core/wire/schemas.js';

type Json = Record<string, unknown>;

/** Schemas written once under `components.schemas` (by these names) and referenced with `$ref`. */
export const COMPONENTS: Readonly<Record<string, z.ZodType>> = {
  // responses
  WorkerRecord: R.WorkerRecordSchema, ReadyResponse: R.ReadyResponseSchema, SelectResponse: R.SelectResponseSchema,
  BookingResponse: R.BookingResponseSchema, OverlapSummary: R.OverlapSummarySchema, WorkerLoad: R.WorkerLoadSchema, KvHint: R.KvHintSchema,
  ReservationResponse: R.ReservationResponseSchema, PotentialLoad: R.PotentialLoadSchema, ModelLoadResponse: R.ModelLoadResponseSchema,
  OverlapScoreRow: R.OverlapScoreRowSchema, OverlapScoresResponse: R.OverlapScoresResponseSchema, RouterEvent: R.RouterEventSchema,
  DumpPartition: R.DumpPartitionSchema, DumpResponse: R.DumpResponseSchema, StatusOk: R.StatusOkSchema, Error: R.ErrorSchema,
  QueueRejection: R.QueueRejectionSchema, QueueRejectionDetails: R.QueueRejectionDetailsSchema,
  LimitRejection: R.LimitRejectionSchema, LimitRejectionDetails: R.LimitRejectionDetailsSchema,
  KvFeedStatus: R.KvFeedStatusSchema,
  // requests
  WorkerRequest: WorkerRequestSchema, WorkerPatch: R.WorkerPatchDocSchema, SelectRequest: SelectRequestSchema,
  SelectAndReserveRequest: SelectAndReserveRequestSchema, ReservationRequest: ReservationRequestSchema, PromptQuery: PromptQuerySchema,
  OutputBlockRequest: OutputBlockRequestSchema, PeerRequest: PeerRequestSchema, RouterOverride: RouterConfigOverrideSchema,
  SessionContext: SessionContextSchema, AffinityTarget: WorkerTargetSchema, PinnedWorker: PinnedWorkerSchema,
  BlockExtraInfo: BlockExtraInfoSchema, MmObject: MmObjectSchema,
};

/** Route groups: the tag of a route is its `tag`, else the one of its first path segment, else that segment. */
const TAGS: Readonly<Record<string, { segments: readonly string[]; description: string }>> = {
  workers: { segments: ['workers'], description: 'The worker catalog: register, update, list and remove workers' },
  selection: { segments: ['select', 'select_and_reserve'], description: 'Choose a worker for a request, with or without booking it' },
  reservations: { segments: ['reservations'], description: 'Book a selection and report its progress until it is freed' },
  inspection: { segments: ['loads', 'potential_loads', 'overlap_scores', 'dump'], description: 'Loads, cache overlap and the index snapshot' },
  health: { segments: ['health', 'ready'], description: 'Liveness and readiness probes' },
  replicas: { segments: ['replica_sync'], description: 'Replica-sync peers of this replica' },
  metrics: { segments: ['metrics'], description: 'Prometheus metrics: KV-feed health, index, selections, queues' },
  meta: { segments: ['openapi.json'], description: 'This document' },
};

/** operationIds of the routes (the service's method names); a route not listed gets `<method><Path>`. */
const OPERATION_IDS: Readonly<Record<string, string>> = {
  'POST /workers': 'upsertWorker', 'GET /workers': 'listWorkers', 'PATCH /workers/:worker_id': 'patchWorker',
  'DELETE /workers/:worker_id': 'deleteWorker', 'GET /health': 'health', 'GET /ready': 'ready', 'POST /select': 'select',
  'POST /select_and_reserve': 'selectAndReserve', 'POST /reservations': 'createReservation',
  'POST /reservations/:id/prefill_complete': 'prefillComplete', 'POST /reservations/:id/output_block': 'addOutputBlock',
  'DELETE /reservations/:id': 'freeReservation', 'GET /loads': 'loads', 'POST /potential_loads': 'potentialLoads',
  'POST /overlap_scores': 'overlapScores', 'GET /dump': 'dump', 'POST /replica_sync/register_peer': 'registerReplicaPeer',
  'POST /replica_sync/deregister_peer': 'deregisterReplicaPeer', 'GET /replica_sync/peers': 'listReplicaPeers', 'GET /openapi.json': 'openApi',
  'GET /metrics': 'metrics',
};

// zod deep-copies the schema through JSON.stringify, which refuses bigint: the exact bounds
// travel as these markers and are swapped back in by `exactBounds`.
const BOUNDS: Readonly<Record<string, bigint>> = { '<u64 max>': U64_MAX, '<i64 min>': -(1n << 63n), '<i64 max>': (1n << 63n) - 1n };
const EXACT = 'written as plain JSON digits, never quoted or rounded';
const U64: Json = { type: 'integer', format: 'uint64', minimum: 0, maximum: '<u64 max>', description: `unsigned 64-bit integer, ${EXACT}` };
const I64_IN: Json = {
  type: 'integer', format: 'int64', minimum: '<i64 min>', maximum: '<u64 max>',
  description: `64-bit hash: signed i64 (negative values are bit-cast to u64) or u64, ${EXACT}`,
};
const I64_OUT: Json = { type: 'integer', format: 'int64', minimum: '<i64 min>', maximum: '<i64 max>', description: `u64 hash bit-cast to i64, ${EXACT}` };
const U32: Json = { type: 'integer', format: 'uint32', minimum: 0, maximum: 0xffffffff };
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
    if (ok(1)) return ok(0xffffffff) ? U32 : { ...U32, maximum: largestAccepted(ok) };
  }
  throw new Error(`openapi: no JSON Schema for the ${type} schema at ${path.join('.') || '(root)'}`);
}

/** The largest u32 a bounded integer schema accepts (binary search; it accepts 1). */
function largestAccepted(ok: (v: unknown) => boolean): number {
  let lo = 1, hi = 0xffffffff;
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2);
    if (ok(mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

const componentNames = new Map<z.ZodType, string>(Object.entries(COMPONENTS).map(([name, s]) => [s, name]));
// zod's metadata lookup: descriptions from the global registry, ids from COMPONENTS.
const metadata = {
  get(schema: z.ZodType): Record<string, unknown> | undefined {
    const meta = z.globalRegistry.get(schema);
    const id = componentNames.get(schema);
    return id === undefined ? meta : { ...meta, id };
  },
} as unknown as z.core.$ZodRegistry<{ id?: string }>;

/** JSON of a schema in the document; named schemas it uses are moved into `components`. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Json): Json {
  const out = z.toJSONSchema(schema, {
    io, target: 'draft-2020-12', reused: 'inline', metadata,
    unrepresentable: (ctx) => describeUnrepresentable(ctx.zodSchema, ctx.path),
  }) as Json;
  delete out.$schema;
  const defs = (out.$defs ?? {}) as Json;
  delete out.$defs;
  for (const [name, def] of Object.entries(defs)) {
    if (name in components && JSON.stringify(components[name]) !== JSON.stringify(def)) {
      throw new Error(`openapi: component ${name} is written two ways (used as a request and as a response?)`);
    }
    components[name] = def;
  }
  return out;
}

/** Replaces the bound markers with their bigint values and zod's `#/$defs/` refs with component refs, in place. */
function finish(v: unknown): unknown {
  if (Array.isArray(v)) v.forEach((x, i) => { v[i] = finish(x); });
  else if (typeof v === 'object' && v !== null) {
    const o = v as Json;
    for (const k of Object.keys(o)) {
      const x = o[k];
      if ((k === 'minimum' || k === 'maximum') && typeof x === 'string') o[k] = BOUNDS[x];
      else if (k === '$ref' && typeof x === 'string') o[k] = x.replace('#/$defs/', '#/components/schemas/');
      else o[k] = finish(x);
    }
  }
  return v;
}

const jsonContent = (schema: Json, mediaType = 'application/json'): Json => ({ [mediaType]: { schema } });
const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** A route's 429 body: a queue limit and/or a capacity limit (`--max-bookings`, `--max-partitions`). */
function tooMany(def: RouteDef): Json {
  const kinds = (def.tooMany ?? ['queue']).map((k) => ref(k === 'queue' ? 'QueueRejection' : 'LimitRejection'));
  return kinds.length === 1 ? kinds[0] : { oneOf: kinds };
}

/** Routes answered without a token when authentication is on (the probes). */
const UNAUTHENTICATED_ROUTES: ReadonlySet<string> = new Set(['/health', '/ready']);

/** The tag of a route. */
export function tagOf(def: RouteDef): string {
  if (def.tag) return def.tag;
  const segment = def.url.split('/')[1] ?? '';
  return Object.entries(TAGS).find(([, t]) => t.segments.includes(segment))?.[0] ?? segment;
}

/** Error statuses every route can answer, and those of JSON-body routes. */
function transportErrors(def: RouteDef): Record<number, string> {
  const out: Record<number, string> = {
    400: 'a malformed %-escape in the URL', 408: 'the request did not arrive in full within --request-timeout-ms',
    500: 'unexpected failure (logged by the service)',
  };
  if (!UNAUTHENTICATED_ROUTES.has(def.url)) out[401] = 'missing or invalid bearer token (only with --auth-token-file)';
  if (def.body !== 'none') out[413] = 'body over 8 MiB';
  if (def.body === 'json') {
    out[400] = `invalid JSON; or ${out[400]}`;
    Object.assign(out, { 415: 'Content-Type is not application/json', 422: 'the body is not a JSON object' });
  }
  return out;
}

function operation(def: RouteDef, components: Json): Json {
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
  const ok = jsonContent(jsonSchema(def.response, 'output', components), def.mediaType);
  const responses: Json = { [def.status]: { description: 'success', content: ok } };
  for (const [status, description] of Object.entries(def.also ?? {})) responses[status] = { description, content: ok };
  const errors: Record<string, string> = { ...transportErrors(def) };
  for (const [status, description] of Object.entries(def.errors)) errors[status] = status in errors ? `${description}; or ${errors[status]}` : description;
  for (const [status, description] of Object.entries(errors)) {
    if (status in responses) throw new Error(`openapi: ${def.method} ${def.url} documents ${status} both as a body and as an error`);
    responses[status] = { description, content: jsonContent(status === '429' ? tooMany(def) : ref('Error')) };
  }
  const key = `${def.method} ${def.url}`;
  const operationId = OPERATION_IDS[key] ?? def.method.toLowerCase() + def.url.replace(/[/:_.]+(\w)/g, (_, c: string) => c.toUpperCase());
  const op: Json = { tags: [tagOf(def)], summary: def.summary, operationId, responses };
  if (parameters.length > 0) op.parameters = parameters;
  if (def.request) op.requestBody = { required: true, content: jsonContent(jsonSchema(def.request, 'input', components)) };
  return op;
}

/** The OpenAPI document of `routes`, served under `prefix` (`''` at the root). */
export function openApiDocument(routes: readonly RouteDef[], version: string, prefix = ''): Json {
  const paths: Record<string, Json> = {};
  const components: Json = {};
  for (const def of routes) {
    const path = def.url.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[def.method.toLowerCase()] = operation(def, components);
  }
  // the named schemas no route reached (e.g. QueueRejection's details) are still written
  for (const [name, schema] of Object.entries(COMPONENTS)) if (!(name in components)) jsonSchema(schema, 'output', components);
  const used = [...new Set(routes.map(tagOf))];
  return finish({
    openapi: '3.1.0',
    info: {
      title: 'select-service', version, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      description: 'KV-cache-aware worker selection for LLM inference (wire-compatible with NVIDIA Dynamo\'s standalone selection service). '
        + 'Errors are {"error": "..."}; unknown routes 404, wrong methods 405. Unknown body fields are ignored. '
        + 'u64 values are plain JSON integers that may exceed 2^53: parse them without rounding.',
    },
    servers: [{ url: prefix || '/', description: 'this service' }],
    tags: used.map((name) => (TAGS[name] ? { name, description: TAGS[name].description } : { name })),
    paths,
    components: { schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))) },
  }) as Json;
}

/** The `GET /openapi.json` route over `routes` (the document is built once per prefix, on first use). */
export function openApiRoute(routes: readonly RouteDef[], version: string): RouteDef {
  const docs = new Map<string, Json>();
  const self: RouteDef = {
    method: 'GET', url: '/openapi.json', body: 'none', status: 200, summary: 'This OpenAPI document',
    response: z.record(z.string(), z.unknown()), errors: {},
    handle: (c) => {
      const prefix = c.prefix;
      let doc = docs.get(prefix);
      if (!doc) docs.set(prefix, (doc = openApiDocument([...routes, self], version, prefix)));
      return doc;
    },
  };
  return self;
}
