/**
 * What the HTTP benches share (http-scale, its server process, http-layers): the prompts, a
 * service whose index already holds their prefixes, and a keep-alive JSON request.
 *
 * Prompts are 2,048 tokens: one of 64 shared 1,024-token prefixes, then a fresh 1,024-token tail.
 * The service is warmed by booking (and freeing) 4 W such prompts, so its approximate index holds
 * every prefix on the workers the selector picked and a selection has real matches to score.
 */
import { Agent, request } from 'node:http';
import { parseRouterConfig } from '../src/core/config/config.js';
import { SelectionServiceBuilder, type SelectionService } from '../src/service/service.js';
import { seededRng, type Rng } from '../src/core/random.js';

const PREFIX_RNG = seededRng(11);
/** The 64 shared prefixes (the same in every process: a fixed seed). */
export const PREFIXES: readonly number[][] = Array.from({ length: 64 }, () => Array.from({ length: 1024 }, () => Math.floor(PREFIX_RNG.next() * 128_000)));

/** A 2,048-token prompt: the shared prefix `which` (random when absent) and a fresh tail. */
export function promptTokens(rng: Rng, which = Math.floor(rng.next() * PREFIXES.length)): number[] {
  return [...PREFIXES[which % PREFIXES.length], ...Array.from({ length: 1024 }, () => Math.floor(rng.next() * 128_000))];
}

/** A service with `workers` workers (block size 16, no KV events), its index warmed with the prefixes. */
export async function warmedService(workers: number): Promise<SelectionService> {
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  for (let w = 1; w <= workers; w++) {
    service.upsertWorker({ worker_id: w, model_name: 'model', endpoint: `http://worker-${w}:8000`, block_size: 16 });
  }
  const rng = seededRng(12);
  for (let i = 0; i < Math.min(4 * workers, 2048); i++) {
    const r = await service.selectAndReserve({ model_name: 'model', selection_id: `warm-${i}`, token_ids: promptTokens(rng, i) });
    service.freeReservation(r.selection_id as string);
  }
  return service;
}

/** One request on `agent` to 127.0.0.1:`port`; resolves with the status, rejects on a non-2xx. */
export function requestJson(agent: Agent, port: number, method: string, path: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent,
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode && res.statusCode < 300 ? resolve(res.statusCode) : reject(new Error(`${method} ${path}: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}
