/**
 * The servers of `npm run bench -- http-scale`, in their own process: the selection service with
 * W workers (block size 16, approximate index warmed with the shared prefixes: http-fleet.ts) on one port, and a bare
 * Fastify app on another whose routes parse the same bodies with Fastify's own JSON parser and
 * answer a small fixed body. Prints `{"service": port, "bare": port}` once both listen.
 *
 *   node build/dist/bench/http-scale-server.js W
 */
import Fastify from 'fastify';
import { buildApp } from '../src/http/app.js';
import { warmedService } from './http-fleet.js';

const workers = Number(process.argv[2] ?? '128');
const service = await warmedService(workers);
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
