/**
 * Unmatched requests (api §1): a path that some route serves under another method is a 405
 * `method not allowed` (with an `Allow` header, as axum sends); any other path is a 404
 * `route not found`. Fastify's router only reports "no match", so the paths of the route table
 * are matched here, on this cold path only.
 */
import type { FastifyInstance } from 'fastify';
import { errorBody, methodNotAllowed, routeNotFound } from '../core/errors.js';

interface PathRoute { method: string; url: string }

/** `/reservations/:id/output_block` -> /^\/reservations\/[^/]+\/output_block$/, compiled once per url. */
const patterns = new Map<string, RegExp>();
function pathPattern(url: string): RegExp {
  let re = patterns.get(url);
  if (re === undefined) {
    const src = url.split('/').map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
    re = new RegExp(`^${src}$`);
    patterns.set(url, re);
  }
  return re;
}

/** The methods `routes` serve at `path` (GET implies HEAD, as Fastify exposes it). */
export function allowedMethods(routes: readonly PathRoute[], path: string): string[] {
  const out = new Set<string>();
  for (const r of routes) {
    if (!pathPattern(r.url).test(path)) continue;
    out.add(r.method);
    if (r.method === 'GET') out.add('HEAD');
  }
  return [...out].sort();
}

/** Installs the 404/405 handler for `routes`. */
export function installNotFound(app: FastifyInstance, routes: readonly PathRoute[]): void {
  app.setNotFoundHandler((req, reply) => {
    const q = req.url.indexOf('?');
    const path = q < 0 ? req.url : req.url.slice(0, q);
    const allow = allowedMethods(routes, path);
    if (allow.length > 0) {
      reply.code(405).header('allow', allow.join(',')).send(errorBody(methodNotAllowed()));
      return;
    }
    reply.code(404).send(errorBody(routeNotFound()));
  });
}
