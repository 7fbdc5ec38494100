/**
 * The HTTP service as a Fastify plugin: {@link selectionApi} mounts every route of the route
 * table, and the 405 answers of their paths, in its own encapsulated scope, with the u64-exact
 * JSON body parser and serializer and the one error handler. Nothing of that leaks into the
 * host: its routes keep their parsers, serializer and error handler, and its 404 handler stays
 * in charge of every path outside ours. Registered with a `prefix`, every route (health,
 * readiness and the OpenAPI document included) moves under it, and unknown paths under the
 * prefix answer our 404. {@link createServer} makes an instance with the service's transport
 * limits, error handler and 404 for the whole server; {@link buildApp} does both (tests,
 * embedding). Listening and signals belong to the process entry (server.ts).
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import { SelectionError, errorBody } from '../core/errors.js';
import { LIMITS } from '../core/config/config.js';
import type { ServiceApi } from '../core/wire/types.js';
import { VERSION } from '../version.js';
import { ignoreBodies, useJsonBodies } from './content-type.js';
import { installErrorHandler, sendError } from './error-handler.js';
import { DRAIN_LIMITS, LingeringClose, lingeringCloseOf, warnCuts, type DrainLimits } from './lingering-close.js';
import { stringifyJson } from '../core/wire/json.js';
import { installNotFound, methodNotAllowedRoutes } from './not-found.js';
import { openApiRoute } from './openapi.js';
import { ROUTES, run, type RouteDef } from './routes.js';
import { unknownFieldCheck } from './unknown-fields.js';

/** Options of {@link createServer}. */
export interface ServerOptions {
  /**
   * Pino options (e.g. `{ level: 'info' }`; structured JSON lines on stdout, or on `stream`), or
   * `false` (the default).
   */
  logger?: boolean | { level: string; stream?: { write(line: string): void } };
  /** The level of the one line per finished request (default `debug`, see RequestLogs; failures always log at error). */
  requestLogLevel?: 'info' | 'debug';
  /**
   * A request (headers and body) must arrive in full within this many ms, else 408 and the
   * connection closes; 0 = no limit. Default `LIMITS.requestTimeoutMs` (30 s).
   */
  requestTimeoutMs?: number;
  /**
   * A socket with no traffic for this many ms is closed, also while its request waits in a
   * selection queue; 0 = never. Default `LIMITS.connectionTimeoutMs` (10 min).
   */
  connectionTimeoutMs?: number;
  /**
   * After an answer given before the request was read in full (413, 415, 401, 408, ...), how much
   * more of it is read and discarded, and for how long, before the socket closes. Default
   * `DRAIN_LIMITS` (4x the body limit, 30 s).
   */
  drainLimits?: DrainLimits;
}

/** Options of the {@link selectionApi} plugin (plus Fastify's own `prefix`). */
export interface SelectionApiOptions {
  service: ServiceApi;
  prefix?: string;
  /** Bearer-token check (`--auth-token-file`); absent = no authentication. */
  auth?: BearerAuth;
}

/** What authentication needs of the host: whether an `Authorization` header value is a valid `Bearer` token. */
export interface BearerAuth { verify(authorization: string | undefined): boolean }

/** Paths (under the plugin's prefix) answered without authentication: probes and metrics scrapers carry no token. */
export const UNAUTHENTICATED_PATHS: ReadonlySet<string> = new Set(['/health', '/ready', '/metrics']);

/** The request-id header: honoured when it comes in, always sent back. */
export const REQUEST_ID_HEADER = 'x-request-id';
/** An incoming id is used when it is 1-128 visible ASCII characters; anything else gets a fresh one. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** The request's id: the client's `x-request-id` when usable, else a random UUID. */
export function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const h = req.headers[REQUEST_ID_HEADER];
  return typeof h === 'string' && REQUEST_ID.test(h) ? h : randomUUID();
}

/**
 * One line per finished request (`request completed`, with its id, method, url, status and time)
 * at `debug` by default, or at `info` when configured so; `incoming request` lines only at trace;
 * failures always at error (error-handler.ts). Why debug: the info line costs ~10 µs of the
 * event loop per request at best (JSON serialization ~1.5 µs plus a synchronous write), and made
 * a `/select` 1.1-1.5x slower at p50 in the paired bench rows (bench/RESULTS.md, "Request logs").
 */
class RequestLogs extends Fastify.LogController {
  constructor(private readonly level: 'info' | 'debug') { super(); }
  override incomingRequest(req: FastifyRequest): void { req.log.trace({ req }, 'incoming request'); }
  override requestCompleted(err: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    if (err) reply.log.error({ req, res: reply, err, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log[this.level]({ req, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * The answer to a client error Node raises before routing (request timeout, malformed request
 * line, oversized headers): `{"error": ...}` like every other error, then a lingering close (the
 * client may still be sending). Node calls this again for every chunk a failed parser is given:
 * a socket that is closing already has its answer, and those calls count the bytes.
 */
function clientError(err: NodeJS.ErrnoException, socket: Socket, lingering: LingeringClose): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (lingering.isClosing(socket)) { lingering.closeAfterDrain(socket); return; }
  const [status, e] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, new SelectionError('SEL_REQUEST_TIMEOUT', 'request not received in full within the request timeout')]
    : err.code === 'HPE_HEADER_OVERFLOW' ? [431, new SelectionError('SEL_BAD_REQUEST', 'request headers too large')]
    : [400, new SelectionError('SEL_BAD_REQUEST', 'malformed HTTP request')];
  const body = JSON.stringify(errorBody(e));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n`
      + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  lingering.closeAfterDrain(socket);
}

/**
 * A Fastify instance for the service: 8 MiB bodies, long path ids, the transport timeouts, request
 * ids (`x-request-id` honoured and echoed), answers given before the body was read that still
 * reach the client (lingering-close.ts), the `{"error": ...}` error handler and
 * `404 {"error":"route not found"}` for the whole server. The Node server is made here: Node 20 enforces `requestTimeout` only when it is given to the
 * constructor (Fastify sets it afterwards, where it has no effect).
 */
export function createServer(opts: ServerOptions = {}): FastifyInstance {
  const requestTimeout = opts.requestTimeoutMs ?? LIMITS.requestTimeoutMs;
  const connectionTimeout = opts.connectionTimeoutMs ?? LIMITS.connectionTimeoutMs;
  const drain = opts.drainLimits ?? DRAIN_LIMITS;
  const lingering = new LingeringClose(drain);
  const serverFactory = (handler: Parameters<typeof createHttpServer>[1]): Server => {
    const server = createHttpServer({
      requestTimeout,
      // how often Node looks for requests past their time (its default, 30 s, would double the limit)
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(requestTimeout / 4) || 1000)),
    }, handler);
    server.keepAliveTimeout = 72_000; // Fastify's default
    server.setTimeout(connectionTimeout);
    return server;
  };
  const app = Fastify({
    serverFactory,
    clientErrorHandler: (err, socket) => clientError(err, socket as Socket, lingering),
    logger: opts.logger ?? false,
    bodyLimit: LIMITS.requestBodyLimitBytes,
    // Reservation ids are client strings of any length (Fastify's default cap is 100 chars -> 404).
    routerOptions: { maxParamLength: 16 * 1024 },
    logController: new RequestLogs(opts.requestLogLevel ?? 'debug'),
    genReqId: requestId,
    // While closing, requests on open keep-alive connections still reach the routes: /ready then
    // answers its 503 body and selections `selection service is shutting down`, instead of
    // Fastify's own 503 body (which is not the `{"error": ...}` shape).
    return503OnClosing: false,
    // Errors Fastify raises before routing (a malformed %-escape in the URL) skip the error
    // handler; route them to the same mapping.
    frameworkErrors: sendError,
  });
  app.addHook('onRequest', (req, reply, done) => { reply.header(REQUEST_ID_HEADER, req.id); done(); });
  lingering.listen(warnCuts(app.log, drain));
  lingering.install(app);
  installErrorHandler(app);
  installNotFound(app);
  return app;
}

/** Every route, including `/openapi.json`. */
export const ALL_ROUTES: readonly RouteDef[] = [...ROUTES, openApiRoute(ROUTES, VERSION)];

/**
 * Mounts the selection API in its own encapsulated scope (under `prefix` when given). Without a
 * prefix the API owns the paths of its routes (every method: the others answer 405); the host's
 * routes, parsers, serializer, error handler and 404 handler are untouched either way. With
 * `auth`, every route of the API but the probes and `/metrics` needs a valid bearer token,
 * checked before anything else (a 401 before a 405).
 */
export const selectionApi: FastifyPluginAsync<SelectionApiOptions> = async (app, { service, auth }) => {
  const prefix = app.prefix;
  useJsonBodies(app);
  installErrorHandler(app);
  if (auth) {
    const open = new Set([...UNAUTHENTICATED_PATHS].map((p) => prefix + p));
    app.addHook('onRequest', (req, reply, done) => {
      const q = req.url.indexOf('?');
      if (open.has(q < 0 ? req.url : req.url.slice(0, q)) || auth.verify(req.headers.authorization)) { done(); return; }
      reply.header('www-authenticate', 'Bearer');
      done(new SelectionError('SEL_UNAUTHORIZED', 'missing or invalid bearer token (send Authorization: Bearer <token>)'));
    });
  }
  // Our 404 body for unknown paths under our prefix; at the root the 404 handler is the host's.
  if (prefix !== '') installNotFound(app);
  app.setReplySerializer((payload) => stringifyJson(payload));
  const report = service.unknownField?.bind(service);
  // drains the server cut at a limit count in this service's metrics (the server logs them)
  const drains = service.drainCut ? lingeringCloseOf(app.server) : undefined;
  if (drains && service.drainCut) {
    const stop = drains.listen(service.drainCut.bind(service));
    app.addHook('onClose', async () => { stop(); });
  }
  const mount = (scope: FastifyInstance, def: RouteDef): void => {
    const check = def.body === 'json' ? unknownFieldCheck(def.url, def.request, report) : null;
    scope.route({
      method: def.method, url: def.url,
      handler: check === null ? (req, reply) => run(def, service, req, reply, prefix)
        : (req, reply) => { check(req.body); return run(def, service, req, reply, prefix); },
    });
  };
  for (const def of ALL_ROUTES) if (def.body !== 'ignored') mount(app, def);
  await app.register(async (scope) => {
    ignoreBodies(scope);
    for (const def of ALL_ROUTES) if (def.body === 'ignored') mount(scope, def);
    for (const r of methodNotAllowedRoutes(ALL_ROUTES, scope.supportedMethods)) scope.route(r);
  });
};

/** A server with the selection API mounted at the root (not listening). */
export async function buildApp(service: ServiceApi, opts: ServerOptions = {}): Promise<FastifyInstance> {
  const app = createServer(opts);
  await app.register(selectionApi, { service });
  return app;
}
