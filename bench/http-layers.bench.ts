/**
 * Where the HTTP `/select` time goes, layer by layer (issue 16's HTTP rows). One process holds a
 * selection service (W workers, block size 16, approximate index warmed as in http-scale: http-fleet.ts) and five
 * servers on 127.0.0.1, each adding one layer to the one before:
 *   bare         Fastify with its defaults, a fixed answer (what http-scale calls "bare")
 *   our server   our Fastify instance (createServer: timeouts, request ids, error handler)
 *   our parse    + our u64-exact body parser and reply serializer
 *   core         + the service's select on the parsed body (its time inside is measured too)
 *   service      the full app (buildApp: routes, metrics hook, request-input), as shipped
 * A sequential client in the same process sends the same 2,048-token bodies (a shared 1,024-token
 * prefix the index holds, a fresh tail, a selection_id) in rounds that rotate over the servers,
 * so machine noise hits every layer alike. Same process, so no cross-process wake-up enters the
 * figures; http-scale measures those over real process boundaries.
 *
 *   node build/dist/bench/http-layers.bench.js [--workers=128] [--rounds=12] [--per-round=300]
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Agent } from 'node:http';
import { buildApp, createServer } from '../src/http/app.js';
import { useJsonBodies } from '../src/http/content-type.js';
import { stringifyJson } from '../src/core/wire/json.js';
import { seededRng } from '../src/core/random.js';
import { promptTokens, requestJson, warmedService } from './http-fleet.js';

const arg = (name: string, d: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? d;
const W = Number(arg('workers', '128'));
const ROUNDS = Number(arg('rounds', '12'));
const PER_ROUND = Number(arg('per-round', '300'));

const service = await warmedService(W);

const answer = { model_name: 'model', routing_group: 'default', worker_id: 1, dp_rank: 0, endpoint: 'http://worker-1:8000', block_size: 16 };
const inside: number[] = [];
const withOurBodies = async (app: FastifyInstance, handler: (body: unknown) => Promise<unknown>): Promise<FastifyInstance> => {
  await app.register(async (scope) => {
    useJsonBodies(scope);
    scope.setReplySerializer((p) => stringifyJson(p));
    scope.post('/select', async (req) => handler(req.body));
  });
  return app;
};
const bare = Fastify({ bodyLimit: 8 << 20 });
bare.post('/select', async () => ({ ...answer }));
const ourServer = createServer();
ourServer.post('/select', async () => ({ ...answer }));
const servers: Record<string, FastifyInstance> = {
  bare,
  'our server': ourServer,
  'our parse': await withOurBodies(createServer(), async () => ({ ...answer })),
  core: await withOurBodies(createServer(), async (body) => {
    const t0 = performance.now();
    const out = await service.select(body);
    inside.push(performance.now() - t0);
    return out;
  }),
  service: await buildApp(service),
};
const ports: Record<string, number> = {};
for (const [k, s] of Object.entries(servers)) {
  await s.listen({ port: 0, host: '127.0.0.1' });
  const a = s.server.address();
  ports[k] = typeof a === 'object' && a ? a.port : 0;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const rng = seededRng(5);
const bodies = Array.from({ length: 400 }, (_, i) => JSON.stringify({ model_name: 'model', selection_id: `q${i}`, token_ids: promptTokens(rng) }));

const times: Record<string, number[]> = Object.fromEntries(Object.keys(ports).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const k of Object.keys(ports)) {
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = performance.now();
      await requestJson(agent, ports[k], 'POST', '/select', bodies[(round * PER_ROUND + i) % bodies.length]);
      if (round >= 2) times[k].push((performance.now() - t0) * 1000); // the first two rounds warm V8
    }
  }
}
// the same selections in a tight loop (parsed bodies, no HTTP between them): what caches kept warm give
const parsed = bodies.map((b) => JSON.parse(b) as unknown);
const loop: number[] = [];
for (let i = 0; i < 4000; i++) {
  const t0 = performance.now();
  await service.select(parsed[i % parsed.length]);
  if (i >= 1000) loop.push((performance.now() - t0) * 1000);
}

const q = (xs: number[], p: number): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const base = q(times.bare, 0.5);
const signed = (v: number): string => `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(0)}`;
console.log(`### HTTP /select layer by layer, W = ${W}, ${(ROUNDS - 2) * PER_ROUND} requests per layer (same process, rotating rounds)\n`);
console.log('| layer | p25 µs | p50 µs | p50 minus bare |');
console.log('|---|---|---|---|');
for (const [k, xs] of Object.entries(times)) console.log(`| ${k} | ${q(xs, 0.25).toFixed(0)} | ${q(xs, 0.5).toFixed(0)} | ${signed(q(xs, 0.5) - base)} |`);
console.log(`\nservice.select inside the "core" layer: p50 ${(q(inside, 0.5) * 1000).toFixed(1)} µs; the same selections in a tight loop: p50 ${q(loop, 0.5).toFixed(1)} µs`);
for (const s of Object.values(servers)) await s.close();
agent.destroy();
await service.shutdown();
