/**
 * A real listening selection server for HTTP tests (127.0.0.1, port 0) and a small client that
 * reads bodies u64-exact. Dynamo's HTTP fixture: `use_kv_events=false`, no queue threshold,
 * workers `{worker_id, model_name: "model", endpoint: "http://worker-N:8000", block_size: 4}`.
 * Every response is checked against the OpenAPI document (test/support/openapi-check.ts).
 */
import { request as httpRequest } from 'node:http';
import type { TestContext } from 'node:test';
import { buildApp } from '../../../src/http/app.js';
import { parseJson, stringifyJson } from '../../../src/core/wire/json.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { checkResponse } from '../../support/openapi-check.js';

/** A response; `body` is the u64-exact parse (`any`, so assertions can index it freely). */
export interface Reply { status: number; headers: Headers; text: string; body: any }

export interface Server {
  base: string;
  service: SelectionService;
  /** JSON request (bodies written u64-exact; a string body is sent verbatim as JSON). */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  /** Registers Dynamo's fixture worker `id` (plus `extra` fields); asserts 201. */
  worker(id: number | bigint | string, extra?: Record<string, unknown>): Promise<Reply>;
}

/** Starts a server for one test; it is closed in `t.after`. */
export async function startServer(t: TestContext, env: Record<string, string> = {},
  configure: (b: SelectionServiceBuilder) => SelectionServiceBuilder = (b) => b): Promise<Server> {
  const service = await configure(new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false', ...env }))).build();
  const app = await buildApp(service);
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => { await app.close(); await service.shutdown(); });
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : stringifyJson(body);
      init.headers = { 'content-type': 'application/json', ...headers };
    }
    const res = await fetch(base + path, init);
    const text = await res.text();
    checkResponse({ method, url: path, status: res.status, contentType: res.headers.get('content-type'), text, allow: res.headers.get('allow') });
    let parsed: unknown;
    try { parsed = text ? parseJson(text) : undefined; } catch { parsed = undefined; }
    return { status: res.status, headers: res.headers, text, body: parsed };
  };
  const worker = async (id: number | bigint | string, extra: Record<string, unknown> = {}): Promise<Reply> => {
    const body = typeof id === 'string'
      ? `{"worker_id":${id},"model_name":"model","endpoint":"http://worker-${id}:8000","block_size":4${Object.keys(extra).length ? `,${stringifyJson(extra).slice(1, -1)}` : ''}}`
      : { worker_id: id, model_name: 'model', endpoint: `http://worker-${id}:8000`, block_size: 4, ...extra };
    const r = await call('POST', '/workers', body);
    if (r.status !== 201) throw new Error(`worker ${id}: ${r.status} ${r.text}`);
    return r;
  };
  return { base, service, call, worker };
}

/** A raw HTTP/1.1 request (for what fetch will not send: no Content-Type, odd bodies). */
export function rawRequest(base: string, method: string, path: string, body?: string | Buffer,
  headers: Record<string, string | number> = {}): Promise<{ status: number; text: string }> {
  const url = new URL(path, base);
  // Node sends DELETE bodies neither chunked nor sized unless told: give the length.
  if (body !== undefined) headers = { 'content-length': Buffer.byteLength(body), ...headers };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const out = { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') };
        try {
          checkResponse({ method, url: path, status: out.status, contentType: res.headers['content-type'] ?? null, text: out.text, allow: res.headers.allow });
        } catch (err) { reject(err); return; }
        resolve(out);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The first `n` token ids of a prompt (1, 2, 3, ... offset by `base`). */
export const toks = (n: number, base = 0): number[] => Array.from({ length: n }, (_, i) => base + i + 1);
