/**
 * The route table of the selection API: one row per route with its method, path, body rule,
 * success status, the schemas the OpenAPI document is generated from, and the handler. The same
 * table registers the routes and the 405 answers of their paths (app.ts) and writes
 * `/openapi.json` (openapi.ts), so they cannot disagree.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type * as z from 'zod';
import {
  OutputBlockRequestSchema, PeerRequestSchema, PromptQuerySchema, ReservationRequestSchema, SelectAndReserveRequestSchema,
  SelectRequestSchema, WorkerRequestSchema, parseBody,
} from '../core/wire/schemas.js';
import type { ServiceApi } from '../core/wire/types.js';
import { jsonObjectBody } from './content-type.js';
import { filterQuery, pathU64, selectOptions } from './request-input.js';
import {
  BookingResponseSchema, DumpResponseSchema, MetricsResponseSchema, ModelLoadResponseSchema, OverlapScoresResponseSchema,
  PeersResponseSchema, PotentialLoadSchema, ReadyResponseSchema, ReservationResponseSchema, SelectResponseSchema, StatusOkSchema,
  WorkerPatchDocSchema, WorkerRecordSchema,
} from './response-schemas.js';

/** The methods the API uses (GET routes also answer HEAD). */
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A response that needs a status other than the route's usual one. */
export class WithStatus {
  constructor(readonly status: number, readonly body: unknown) {}
}

/** What a handler sees. */
export interface Call {
  service: ServiceApi;
  req: FastifyRequest;
  reply: FastifyReply;
  /** The JSON object body (routes with `body: 'json'`); read after the path, as axum extracts. */
  readonly body: Record<string, unknown>;
  params: Record<string, string>;
  /** The prefix the API is mounted under (`''` at the root). */
  prefix: string;
}

/** One route: how it is mounted, documented and run. */
export interface RouteDef {
  method: Method;
  /** Fastify path syntax (`:param`). */
  url: string;
  /** `json`: a JSON object is required; `ignored`: any body is accepted and dropped; `none`: GET. */
  body: 'json' | 'ignored' | 'none';
  status: number;
  summary: string;
  request?: z.ZodType;
  response: z.ZodType;
  /** Media type of the response body (default `application/json`). */
  mediaType?: string;
  /** Other statuses answered with the `response` body, e.g. `{ 503: 'not ready' }`. */
  also?: Record<number, string>;
  /** Error statuses this route documents besides the transport ones, e.g. `{ 404: 'worker not found' }` (body `{"error"}`; 429 adds `details`). */
  errors: Record<number, string>;
  /** What a 429 of this route reports: a queue limit (the default) and/or a capacity limit (`--max-*`). */
  tooMany?: readonly ('queue' | 'capacity')[];
  /** OpenAPI tag (default: the group of the first path segment). */
  tag?: string;
  query?: boolean;
  policyClassHeader?: boolean;
  /** Runs the operation: returns the body (sent with `status`) or a {@link WithStatus}. */
  handle(c: Call): unknown;
}

const peerEndpoint = (body: Record<string, unknown>): string => parseBody(PeerRequestSchema, body).endpoint;

const workerId = (c: Call): bigint => pathU64('worker_id', c.params.worker_id);
const NOT_READY = { 503: 'no schedulable worker (or shutting down)' };
const INPUT = { 400: 'invalid prompt fields', 422: 'body does not fit the schema or a limit (the message names the field)' };
const WORKER_INPUT = { 422: `${INPUT[422]}, or names an endpoint outside --allowed-endpoints`, 429: 'would create a partition beyond --max-partitions' };

/** Every route except `/openapi.json` (added by the app). */
export const ROUTES: readonly RouteDef[] = [
  { method: 'POST', url: '/workers', body: 'json', status: 201, summary: 'Register or replace a worker (upsert)', request: WorkerRequestSchema,
    response: WorkerRecordSchema, errors: { ...WORKER_INPUT, 503: 'shutting down' }, tooMany: ['capacity'],
    handle: (c) => c.service.upsertWorker(c.body as never) },
  { method: 'GET', url: '/workers', body: 'none', status: 200, summary: 'List workers, sorted by (model_name, routing_group, worker_id)',
    response: WorkerRecordSchema.array(), errors: {}, query: true, handle: (c) => c.service.listWorkers(filterQuery(c.req.query)) },
  { method: 'PATCH', url: '/workers/:worker_id', body: 'json', status: 200, summary: 'Update fields of a worker (null = unchanged)',
    request: WorkerPatchDocSchema, response: WorkerRecordSchema, errors: { 400: 'worker_id is not a u64', 404: 'worker not found', ...WORKER_INPUT },
    tooMany: ['capacity'],
    handle: (c) => c.service.patchWorker(workerId(c), c.body as never) },
  { method: 'DELETE', url: '/workers/:worker_id', body: 'ignored', status: 200, summary: 'Remove a worker (its bookings are released)',
    response: WorkerRecordSchema, errors: { 400: 'worker_id is not a u64', 404: 'worker not found' },
    handle: (c) => c.service.deleteWorker(workerId(c)) },
  { method: 'GET', url: '/health', body: 'none', status: 200, summary: 'Process liveness', response: StatusOkSchema, errors: {},
    handle: () => ({ status: 'ok' }) },
  { method: 'GET', url: '/ready', body: 'none', status: 200, summary: 'Readiness: 200 with a schedulable worker, else 503 (same body)',
    response: ReadyResponseSchema, also: { 503: 'not ready (same body)' }, errors: {},
    handle: (c) => { const r = c.service.ready(); return r.ready ? r : new WithStatus(503, r); } },
  { method: 'POST', url: '/select', body: 'json', status: 200, summary: 'Choose a worker without booking load', request: SelectRequestSchema,
    response: SelectResponseSchema, errors: { ...INPUT, 429: 'queue limit (body has details)', ...NOT_READY }, policyClassHeader: true,
    handle: (c) => c.service.select(c.body as never, selectOptions(c.req, c.reply)) },
  { method: 'POST', url: '/select_and_reserve', body: 'json', status: 200, summary: 'Choose a worker and book the request atomically',
    request: SelectAndReserveRequestSchema, response: BookingResponseSchema,
    errors: { ...INPUT, 409: 'selection_id already reserved', 429: 'queue limit or --max-bookings (body has details)', ...NOT_READY }, policyClassHeader: true,
    tooMany: ['queue', 'capacity'],
    handle: (c) => c.service.selectAndReserve(c.body as never, selectOptions(c.req, c.reply)) },
  { method: 'POST', url: '/reservations', body: 'json', status: 201, summary: 'Book a selection (replay of a cached /select, or explicit with worker_id)',
    request: ReservationRequestSchema, response: ReservationResponseSchema,
    errors: { ...INPUT, 404: 'no pending selection / worker not schedulable', 409: 'selection_id already reserved',
      429: '--max-bookings reached (body has details)', ...NOT_READY }, tooMany: ['capacity'],
    handle: (c) => c.service.createReservation(c.body as never) },
  { method: 'POST', url: '/reservations/:id/prefill_complete', body: 'ignored', status: 200, summary: 'Prefill finished (idempotent)',
    response: StatusOkSchema, errors: { 404: 'reservation not found' }, handle: (c) => c.service.prefillComplete(c.params.id) },
  { method: 'POST', url: '/reservations/:id/output_block', body: 'json', status: 200, summary: 'One more output block (local; send {} at least)',
    request: OutputBlockRequestSchema, response: StatusOkSchema,
    errors: { 400: 'decay_fraction outside [0, 1]', 404: 'reservation not found', 415: 'no JSON body', 422: INPUT[422] },
    handle: (c) => c.service.addOutputBlock(c.params.id, c.body) },
  { method: 'DELETE', url: '/reservations/:id', body: 'ignored', status: 200, summary: 'Free a reservation (a second DELETE is 404)',
    response: StatusOkSchema, errors: { 404: 'reservation not found' }, handle: (c) => c.service.freeReservation(c.params.id) },
  { method: 'GET', url: '/loads', body: 'none', status: 200, summary: 'Active load per partition and worker rank', query: true,
    response: ModelLoadResponseSchema.array(), errors: {}, handle: (c) => c.service.loads(filterQuery(c.req.query)) },
  { method: 'POST', url: '/potential_loads', body: 'json', status: 200, summary: 'Load per worker rank if this prompt were added',
    request: PromptQuerySchema, response: PotentialLoadSchema.array(), errors: { ...INPUT, ...NOT_READY },
    handle: (c) => c.service.potentialLoads(c.body as never) },
  { method: 'POST', url: '/overlap_scores', body: 'json', status: 200, summary: 'Tiered overlap of the prompt on every schedulable worker rank',
    request: PromptQuerySchema, response: OverlapScoresResponseSchema, errors: { ...INPUT, ...NOT_READY },
    handle: (c) => c.service.overlapScores(c.body as never) },
  { method: 'GET', url: '/dump', body: 'none', status: 200, summary: 'Index snapshot as RouterEvents (the recovery format)',
    response: DumpResponseSchema, errors: {}, handle: (c) => c.service.dump() },
  { method: 'POST', url: '/replica_sync/register_peer', body: 'json', status: 201, summary: 'Add a replica-sync peer (201 new, 200 known)',
    request: PeerRequestSchema, response: StatusOkSchema,
    also: { 200: 'already registered' }, errors: { 400: 'invalid ZMQ endpoint', 409: 'replica sync is disabled',
      422: `${INPUT[422]}, or an endpoint outside --allowed-endpoints` },
    handle: (c) => {
      const { created } = c.service.registerReplicaPeer(peerEndpoint(c.body));
      return created ? { status: 'ok' } : new WithStatus(200, { status: 'ok' });
    } },
  { method: 'POST', url: '/replica_sync/deregister_peer', body: 'json', status: 200, summary: 'Remove a replica-sync peer',
    request: PeerRequestSchema, response: StatusOkSchema,
    errors: { 400: 'invalid ZMQ endpoint', 404: 'peer not found', 409: 'replica sync is disabled', 422: INPUT[422] },
    handle: (c) => { c.service.deregisterReplicaPeer(peerEndpoint(c.body)); return { status: 'ok' }; } },
  { method: 'GET', url: '/replica_sync/peers', body: 'none', status: 200, summary: 'Replica-sync peers, sorted',
    response: PeersResponseSchema, errors: {}, handle: (c) => c.service.listReplicaPeers() },
  { method: 'GET', url: '/metrics', body: 'none', status: 200, summary: 'Prometheus metrics (text exposition format)',
    response: MetricsResponseSchema, mediaType: 'text/plain', errors: {},
    handle: async (c) => {
      const m = await c.service.metrics();
      c.reply.type(m.contentType);
      return m.text;
    } },
];

/** Runs a route: body rule, handler, status. Thrown errors go to the one error handler. */
export async function run(def: RouteDef, service: ServiceApi, req: FastifyRequest, reply: FastifyReply, prefix = ''): Promise<unknown> {
  if (def.mediaType) reply.type(def.mediaType);
  const out = await def.handle({
    service, req, reply, prefix, params: (req.params ?? {}) as Record<string, string>,
    get body() { return def.body === 'json' ? jsonObjectBody(req) : {}; },
  });
  if (out instanceof WithStatus) {
    reply.code(out.status);
    return out.body;
  }
  reply.code(def.status);
  return out;
}
