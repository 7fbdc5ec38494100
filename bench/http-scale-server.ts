/**
 * The servers of `npm run bench -- http-scale`, in their own process: the selection service with
 * W workers (block size 16, approximate index warmed with booked prompts) on one port, and a bare
 * Fastify app on another whose routes parse the same bodies with Fastify's own JSON parser and
 * answer a small fixed body. Prints `{"service": port, "bare": port}` once both listen.
 *
 *   node build/dist/bench/http-scale-server.js W
 */
import Fastify from 'fastify';
import { buildApp } from '../src/http/app.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { SelectionServiceBuilder } from '../src/service/service.js';
import { seededRng } from '../src/core/random.js';

const workers = Number(process.argv[2] ?? '128');
const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
for (let w = 1; w <= workers; w++) {
  service.upsertWorker({ worker_id: w, model_name: 'model', endpoint: `http://worker-${w}:8000`, block_size: 16 });
}
// warm the approximate index: prompts booked (and freed) on the workers the selector picks
const rng = seededRng(11);
const prefixes = Array.from({ length: 64 }, () => Array.from({ length: 1024 }, () => Math.floor(rng.next() * 128_000)));
for (let i = 0; i < Math.min(4 * workers, 2048); i++) {
  const tokens = [...prefixes[i % prefixes.length], ...Array.from({ length: 1024 }, () => Math.floor(rng.next() * 128_000))];
  const r = await service.selectAndReserve({ model_name: 'model', selection_id: `warm-${i}`, token_ids: tokens });
  service.freeReservation(r.selection_id as string);
}
const app = await buildApp(service);
await app.listen({ port: 0, host: '127.0.0.1' });

const bare = Fastify({ bodyLimit: 8 * 1024 * 1024 });
const answer = { model_name: 'model', routing_group: 'default', worker_id: 1, dp_rank: 0, endpoint: 'http://worker-1:8000', block_size: 16 };
bare.post('/select', async (req) => ({ ...answer, selection_id: (req.body as { selection_id?: string }).selection_id }));
bare.post('/select_and_reserve', async (req) => ({ ...answer, selection_id: (req.body as { selection_id?: string }).selection_id }));
bare.delete('/reservations/:id', async () => ({ status: 'ok' }));
await bare.listen({ port: 0, host: '127.0.0.1' });
const port = (a: ReturnType<typeof app.server.address>): number => (typeof a === 'object' && a ? a.port : 0);
process.stdout.write(`${JSON.stringify({ service: port(app.server.address()), bare: port(bare.server.address()) })}\n`);
process.stdin.resume();
process.stdin.on('end', () => { void app.close().then(() => bare.close()).then(() => service.shutdown()).then(() => process.exit(0)); });
