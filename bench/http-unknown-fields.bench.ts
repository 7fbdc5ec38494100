/**
 * What finding unknown body fields costs a `/select` (the check runs on every JSON route before
 * its handler, src/http/unknown-fields.ts). One process, one warmed service (W workers, as
 * http-layers), three servers on 127.0.0.1 in rotating rounds so machine noise hits each alike:
 *   off        the full app with the check not installed (the service offers no report hook)
 *   on         the full app as shipped (the check runs; this body has no unknown field)
 *   on+2       the same with two unknown fields in the body (`modelName`, `token_id`): counted,
 *              warned about once a minute
 * Then the check alone in a tight loop on the parsed bodies, and what remembering how a booking
 * ended adds to removing its reservation row (the DELETE path), with and without that memory.
 *
 *   node build/dist/bench/http-unknown-fields.bench.js [--workers=128] [--rounds=12] [--per-round=300]
 */
import { Agent } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/http/app.js';
import { unknownFieldCheck } from '../src/http/unknown-fields.js';
import { SelectRequestSchema } from '../src/core/wire/schemas.js';
import { ReservationIndex } from '../src/core/booking/reservations.js';
import { seededRng, systemClock } from '../src/core/random.js';
import { promptTokens, requestJson, warmedService } from './http-fleet.js';

const arg = (name: string, d: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? d;
const W = Number(arg('workers', '128'));
const ROUNDS = Number(arg('rounds', '12'));
const PER_ROUND = Number(arg('per-round', '300'));

const service = await warmedService(W);
const on = await buildApp(service);
// the same service without the report hook: buildApp installs no check
Object.defineProperty(service, 'unknownField', { value: undefined, configurable: true });
const off = await buildApp(service);
delete (service as { unknownField?: unknown }).unknownField;
const servers: Record<string, FastifyInstance> = { off, on };
const ports: Record<string, number> = {};
for (const [k, s] of Object.entries(servers)) {
  await s.listen({ port: 0, host: '127.0.0.1' });
  const a = s.server.address();
  ports[k] = typeof a === 'object' && a ? a.port : 0;
}

const rng = seededRng(5);
const plain = Array.from({ length: 400 }, (_, i) => ({ model_name: 'model', selection_id: `q${i}`, token_ids: promptTokens(rng) }));
const bodies: Record<string, string[]> = {
  off: plain.map((b) => JSON.stringify(b)),
  on: plain.map((b) => JSON.stringify(b)),
  'on+2': plain.map((b) => JSON.stringify({ ...b, modelName: 'model', token_id: [1] })),
};
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const times: Record<string, number[]> = { off: [], on: [], 'on+2': [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const k of Object.keys(times)) {
    const port = ports[k === 'on+2' ? 'on' : k];
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = performance.now();
      const status = await requestJson(agent, port, 'POST', '/select', bodies[k][(round * PER_ROUND + i) % 400]);
      if (status !== 200) throw new Error(`${k}: ${status}`);
      if (round >= 2) times[k].push((performance.now() - t0) * 1000); // the first two rounds warm V8
    }
  }
}

const q = (xs: number[], p: number): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
console.log(`### /select with and without the unknown-field check, W = ${W}, ${(ROUNDS - 2) * PER_ROUND} requests each (rotating rounds)\n`);
console.log('| server | p25 µs | p50 µs | p50 minus off |');
console.log('|---|---|---|---|');
const base = q(times.off, 0.5);
for (const [k, xs] of Object.entries(times)) {
  const d = q(xs, 0.5) - base;
  console.log(`| ${k} | ${q(xs, 0.25).toFixed(1)} | ${q(xs, 0.5).toFixed(1)} | ${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(1)} |`);
}

/** ns per call of `fn` over `n` calls, the best of 5 runs. */
const ns = (n: number, fn: (i: number) => void): number => {
  let best = Infinity;
  for (let run = 0; run < 5; run++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn(i);
    best = Math.min(best, ((performance.now() - t0) * 1e6) / n);
  }
  return best;
};
let noted = 0;
const check = unknownFieldCheck('/select', SelectRequestSchema, () => { noted++; })!;
const parsed = plain.map((b) => ({ ...b }));
const withSession = plain.map((b) => ({ ...b, session_context: { session_id: 's' }, router_config_override: { router_temperature: 0 } }));
console.log('\n| the check alone (tight loop) | ns per body |');
console.log('|---|---|');
console.log(`| select body: model_name, selection_id, token_ids | ${ns(200_000, (i) => check(parsed[i % 400])).toFixed(0)} |`);
console.log(`| + session_context, router_config_override (nested objects looked into) | ${ns(200_000, (i) => check(withSession[i % 400])).toFixed(0)} |`);
if (noted !== 0) throw new Error('the check reported a known field');

const ended = new ReservationIndex({ clock: systemClock, ttlSecs: 300, maxEntries: 65536, maxBytes: 8 << 20 });
const bare = new ReservationIndex();
const END = { kind: 'freed', byPeer: false } as const;
let k = 0;
const cycle = (ix: ReservationIndex) => (): void => { const id = `r-${k++}`; ix.commit(ix.claim(id, 'p'), 1n, 0); ix.remove(id, END); };
console.log('\n| claim + commit + remove of a reservation row | ns |');
console.log('|---|---|');
const [a, b] = [cycle(bare), cycle(ended)];
console.log(`| without the memory of ended bookings | ${ns(200_000, a).toFixed(0)} |`);
console.log(`| with it (65,536 ids, 8 MiB, full after the first run) | ${ns(200_000, b).toFixed(0)} |`);

for (const s of Object.values(servers)) await s.close();
agent.destroy();
await service.shutdown();
