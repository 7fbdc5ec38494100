/**
 * HTTP selection at fleet scale over real sockets (issue 16): for W = 128, 1,024 and 8,000 workers
 * (block size 16, 2,048-token prompts as token_ids), a server process runs the service and, on
 * another port, a bare Fastify app whose routes only parse the same bodies. In the same run:
 * - sequential `/select` and `/select_and_reserve` + `DELETE`: p50/p99 of each against the bare
 *   route, with the difference (what the service adds to parsing a body);
 * - throughput of `/select_and_reserve` + `DELETE` with 32 concurrent clients, against the bare
 *   routes, and the ratio.
 * Rounds alternate service / bare so machine noise hits both alike; each route first gets `--warmup`
 * unmeasured sequential requests on both servers.
 *
 *   node build/dist/bench/http-scale.bench.js [--workers=128,1024,8000] [--requests=400] [--seconds=3] [--warmup=200]
 */
import { spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seededRng } from '../src/core/random.js';
import { promptTokens, requestJson } from './http-fleet.js';

const arg = (name: string, d: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? d;
const FLEETS = arg('workers', '128,1024,8000').split(',').map(Number);
const REQUESTS = Number(arg('requests', '400'));
const SECONDS = Number(arg('seconds', '3'));
const CLIENTS = 32;
const WARMUP = Number(arg('warmup', '200'));

const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
const call = (port: number, method: string, path: string, body?: string): Promise<number> => requestJson(agent, port, method, path, body);

const rng = seededRng(5);
/** A 2,048-token prompt: one of the prefixes the server warmed, and a fresh tail. */
function body(id: string): string {
  return JSON.stringify({ model_name: 'model', selection_id: id, token_ids: promptTokens(rng) });
}

const pct = (xs: number[], p: number): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function sequential(port: number, route: '/select' | '/select_and_reserve', n: number, tag: string): Promise<number[]> {
  const bodies = Array.from({ length: n }, (_, i) => body(`${tag}-${i}`));
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call(port, 'POST', route, bodies[i]);
    out.push((performance.now() - t0) * 1000);
    if (route === '/select_and_reserve') await call(port, 'DELETE', `/reservations/${tag}-${i}`);
  }
  return out;
}

async function throughput(port: number, tag: string): Promise<number> {
  const bodies = Array.from({ length: 256 }, (_, i) => body(`x-${i}`));
  let done = 0, seq = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (performance.now() < end) {
      const id = `${tag}-${seq++}`;
      await call(port, 'POST', '/select_and_reserve', bodies[seq % bodies.length].replace(/"selection_id":"[^"]*"/, `"selection_id":"${id}"`));
      await call(port, 'DELETE', `/reservations/${id}`);
      done++;
    }
  }));
  return done / SECONDS;
}

const us = (v: number): string => `${v.toFixed(0)} µs`;
console.log(`### HTTP selection at fleet scale (${REQUESTS} sequential requests per route and fleet, ${CLIENTS} clients for ${SECONDS} s), 2,048-token prompts\n`);
console.log('| workers | route | service p50 / p99 | bare p50 / p99 | p50 difference | throughput service / bare (ops/s) | ratio |');
console.log('|---|---|---|---|---|---|---|');
for (const w of FLEETS) {
  const server = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), 'http-scale-server.js'), String(w)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const first = await createInterface({ input: server.stdout })[Symbol.asyncIterator]().next();
  const ports = JSON.parse(first.value as string) as { service: number; bare: number };
  for (const route of ['/select', '/select_and_reserve'] as const) {
    // warm-up, not measured: the first few hundred requests of a fresh process run while V8 is
    // still compiling the route (its first 100 measured 20-50% slower than the next 100)
    for (const port of [ports.service, ports.bare]) await sequential(port, route, WARMUP, `w${port}`);
    const s: number[] = [], b: number[] = [];
    for (let round = 0; round < 4; round++) {
      s.push(...await sequential(ports.service, route, REQUESTS / 4, `s${round}`));
      b.push(...await sequential(ports.bare, route, REQUESTS / 4, `b${round}`));
    }
    let tput = '', ratio = '';
    if (route === '/select_and_reserve') {
      const ts = [await throughput(ports.service, 'ts0'), await throughput(ports.service, 'ts1')];
      const tb = [await throughput(ports.bare, 'tb0'), await throughput(ports.bare, 'tb1')];
      const ms = Math.max(...ts), mb = Math.max(...tb);
      tput = `${ms.toFixed(0)} / ${mb.toFixed(0)}`;
      ratio = (ms / mb).toFixed(2);
    }
    const label = route === '/select' ? '`/select`' : '`/select_and_reserve` + `DELETE`';
    console.log(`| ${w} | ${label} | ${us(pct(s, 0.5))} / ${us(pct(s, 0.99))} | ${us(pct(b, 0.5))} / ${us(pct(b, 0.99))} | +${us(pct(s, 0.5) - pct(b, 0.5))} | ${tput} | ${ratio} |`);
  }
  server.stdin.end();
  await new Promise((r) => server.once('exit', r));
}
agent.destroy();
