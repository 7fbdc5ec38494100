/**
 * The HTTP service as a Fastify plugin (api §1, §2): {@link selectionApi} mounts every route of
 * the route table on the instance it is registered on, with the u64-exact JSON body parser and
 * serializer, the one error handler and the 404/405 handler. {@link createServer} makes an
 * instance with the transport limits of api §1; {@link buildApp} does both (tests, embedding).
 * Listening and signals belong to the process entry (server.ts).
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import { SelectionError, errorBody } from '../core/errors.js';
import { LIMITS } from '../core/config/config.js';
import type { ServiceApi } from '../core/wire/types.js';
import { VERSION } from '../version.js';
import { ignoreBodies, useJsonBodies } from './content-type.js';
import { installErrorHandler, sendError } from './error-handler.js';
import { stringifyJson } from '../core/wire/json.js';
import { installNotFound } from './not-found.js';
import { openApiRoute } from './openapi.js';
import { ROUTES, run, type RouteDef } from './routes.js';

/** Options of {@link createServer}. */
export interface ServerOptions {
  /** Pino options (e.g. `{ level: 'info' }`; structured JSON lines on stdout), or `false` (the default). */
  logger?: boolean | { level: string };
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
}

/** Options of the {@link selectionApi} plugin. */
export interface SelectionApiOptions {
  service: ServiceApi;
  /** Bearer-token check (`--auth-token-file`); absent = no authentication. */
  auth?: BearerAuth;
}

/** What authentication needs of the host: whether an `Authorization` header value is a valid `Bearer` token. */
export interface BearerAuth { verify(authorization: string | undefined): boolean }

/** Paths answered without authentication (probes and metrics scrapers carry no token). */
export const UNAUTHENTICATED_PATHS: ReadonlySet<string> = new Set(['/health', '/ready', '/metrics']);

/**
 * Per-request lines at debug level: a selection service answers thousands of small requests a
 * second, and an info line for each would cost more than the selection. Failures still log at
 * error (error-handler.ts).
 */
class DebugRequestLogs extends Fastify.LogController {
  override incomingRequest(req: FastifyRequest): void { req.log.debug({ req }, 'incoming request'); }
  override requestCompleted(err: Error | null | undefined, _req: FastifyRequest, reply: FastifyReply): void {
    if (err) reply.log.error({ res: reply, err, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * The answer to a client error Node raises before routing (request timeout, malformed request
 * line, oversized headers): `{"error": ...}` like every other error, then the socket closes.
 */
function clientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, e] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, new SelectionError('SEL_REQUEST_TIMEOUT', 'request not received in full within the request timeout')]
    : err.code === 'HPE_HEADER_OVERFLOW' ? [431, new SelectionError('SEL_BAD_REQUEST', 'request headers too large')]
    : [400, new SelectionError('SEL_BAD_REQUEST', 'malformed HTTP request')];
  const body = JSON.stringify(errorBody(e));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n`
      + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

/**
 * A Fastify instance with the transport rules of api §1 (8 MiB bodies, long path ids) and the
 * transport timeouts. The Node server is made here: Node 20 enforces `requestTimeout` only when
 * it is given to the constructor (Fastify sets it afterwards, where it has no effect).
 */
export function createServer(opts: ServerOptions = {}): FastifyInstance {
  const requestTimeout = opts.requestTimeoutMs ?? LIMITS.requestTimeoutMs;
  const connectionTimeout = opts.connectionTimeoutMs ?? LIMITS.connectionTimeoutMs;
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
  return Fastify({
    serverFactory,
    clientErrorHandler: clientError,
    logger: opts.logger ?? false,
    bodyLimit: LIMITS.requestBodyLimitBytes,
    // Reservation ids are client strings of any length (Fastify's default cap is 100 chars -> 404).
    routerOptions: { maxParamLength: 16 * 1024 },
    logController: new DebugRequestLogs(),
    // While closing, requests on open keep-alive connections still reach the routes: /ready then
    // answers its 503 body and selections `selection service is shutting down`, instead of
    // Fastify's own 503 body (which is not the `{"error": ...}` shape).
    return503OnClosing: false,
    // Errors Fastify raises before routing (a malformed %-escape in the URL) skip the error
    // handler; route them to the same mapping.
    frameworkErrors: sendError,
  });
}

/** Every route, including `/openapi.json`. */
export const ALL_ROUTES: readonly RouteDef[] = [...ROUTES, openApiRoute(ROUTES, VERSION)];

/** Mounts the selection API on the instance it is registered on (not encapsulated). */
export const selectionApi: FastifyPluginAsync<SelectionApiOptions> = async (app, { service, auth }) => {
  useJsonBodies(app);
  installErrorHandler(app);
  if (auth) {
    // every route but the probes and /metrics, unknown paths included (a 401 before any 404)
    app.addHook('onRequest', (req, reply, done) => {
      const q = req.url.indexOf('?');
      if (UNAUTHENTICATED_PATHS.has(q < 0 ? req.url : req.url.slice(0, q)) || auth.verify(req.headers.authorization)) { done(); return; }
      reply.header('www-authenticate', 'Bearer');
      done(new SelectionError('SEL_UNAUTHORIZED', 'missing or invalid bearer token (send Authorization: Bearer <token>)'));
    });
  }
  installNotFound(app, ALL_ROUTES);
  app.setReplySerializer((payload) => stringifyJson(payload));
  const mount = (scope: FastifyInstance, def: RouteDef): void => {
    scope.route({ method: def.method, url: def.url, handler: (req, reply) => run(def, service, req, reply) });
  };
  for (const def of ALL_ROUTES) if (def.body !== 'ignored') mount(app, def);
  await app.register(async (scope) => {
    ignoreBodies(scope);
    for (const def of ALL_ROUTES) if (def.body === 'ignored') mount(scope, def);
  });
};
// What fastify-plugin does: apply the parsers and handlers to the parent instead of a child scope.
(selectionApi as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;

/** A server with the selection API mounted (not listening). */
export async function buildApp(service: ServiceApi, opts: ServerOptions = {}): Promise<FastifyInstance> {
  const app = createServer(opts);
  await app.register(selectionApi, { service });
  return app;
}
