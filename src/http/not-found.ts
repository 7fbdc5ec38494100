/**
 * Unmatched requests: a path that some route serves under another method is a 405
 * `method not allowed` with an `Allow` header (as axum sends), registered as real routes of the
 * API's scope so a host application's own 404 handler is never involved; any other path is a
 * 404 `route not found` (the handler {@link installNotFound} sets, for the scope it is called on).
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { errorBody, methodNotAllowed, routeNotFound } from '../core/errors.js';

interface PathRoute { method: string; url: string }

/** The methods `routes` serve at `url` (GET implies HEAD, as Fastify exposes it), sorted. */
export function allowedMethods(routes: readonly PathRoute[], url: string): string[] {
  const out = new Set<string>();
  for (const r of routes) {
    if (r.url !== url) continue;
    out.add(r.method);
    if (r.method === 'GET') out.add('HEAD');
  }
  return [...out].sort();
}

/** One route per path of `routes`, answering 405 to every other method of `supported`. */
export function methodNotAllowedRoutes(routes: readonly PathRoute[], supported: readonly string[]): RouteOptions[] {
  const out: RouteOptions[] = [];
  for (const url of new Set(routes.map((r) => r.url))) {
    const allow = allowedMethods(routes, url);
    const others = supported.filter((m) => !allow.includes(m));
    if (others.length === 0) continue;
    const allowHeader = allow.join(',');
    out.push({
      method: others, url, exposeHeadRoute: false,
      handler: (req, reply) => {
        // the router lets a parameter match an empty segment (`/workers/`): that path is not ours
        if (Object.values(req.params as Record<string, string>).includes('')) return reply.callNotFound();
        return reply.code(405).header('allow', allowHeader).send(errorBody(methodNotAllowed()));
      },
    });
  }
  return out;
}

/** Installs the 404 `route not found` handler on `app` (for its prefix). */
export function installNotFound(app: FastifyInstance): void {
  app.setNotFoundHandler((_req, reply) => { reply.code(404).send(errorBody(routeNotFound())); });
}
