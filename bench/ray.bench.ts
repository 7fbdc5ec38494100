/**
 * `npm run bench -- ray`: SelectServiceRouter vs Serve's default router (PowerOfTwoChoices) and Ray
 * Serve LLM's PrefixCacheAffinityRouter in one real Ray session (bench/ray_router_bench.py, run in
 * the Ray venv of scripts/ray-venv.sh) against a select-service process on 127.0.0.1 in
 * approximate mode. Every figure comes from one interleaved run; the load average is printed at
 * the start and the end (the targets are for a quiet 2-core machine).
 *
 * Targets (issues 22, 28): sequential p50 at most +1.0 ms over the default router; throughput at
 * 16 in flight at least 0.9x the default's. Arguments after `--` pass to the Python bench
 * (`--sequential=N`, `--burst=N`, `--bursts=N`, `--transports=auto,asyncio,aiohttp,thread`,
 * `--prefix=0`, `--stall-s=S`, `--baseline=MODULE`; the `=` form, since scripts/bench.mjs takes bare words as file filters).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startService } from '../test/support/service-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const PYTHON = join(root, '.cache/ray-venv/bin/python');

async function main(): Promise<void> {
  if (!existsSync(PYTHON)) {
    console.log('ray bench: no Ray venv at .cache/ray-venv; run scripts/ray-venv.sh first');
    return;
  }
  const service = await startService([], { DYN_ROUTER_USE_KV_EVENTS: 'false' });
  try {
    const lines: Record<string, any>[] = [];
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(PYTHON, [join(root, 'bench/ray_router_bench.py'), ...process.argv.slice(2)], {
        cwd: root, env: { ...process.env, SELECT_SERVICE_URL: service.url, SELECT_SERVICE_PID: String(service.child.pid), PYTHONUNBUFFERED: '1' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line.startsWith('{')) continue;
          const row = JSON.parse(line) as Record<string, any>;
          lines.push(row);
          console.log(line);
        }
      });
      child.once('close', resolve);
    });
    if (code !== 0) throw new Error(`ray_router_bench.py exited with ${code}`);
    const seq = lines.find((l) => l.event === 'sequential') ?? { p50_ms: {}, difference_ms: {} };
    const conc = lines.find((l) => l.event === '16-in-flight');
    const prefix = lines.find((l) => l.event === 'prefix-in-flight');
    console.log('\n| router | sequential p50 (ms) | vs default | 16 in flight, median ratio to default |');
    console.log('|---|---|---|---|');
    for (const [name, p50] of Object.entries(seq.p50_ms) as [string, number][]) {
      const diff = name === 'default' ? '' : `${seq.difference_ms[name] >= 0 ? '+' : ''}${seq.difference_ms[name].toFixed(2)} ms`;
      const r = conc?.median_ratio_to_default?.[name];
      const ratio = name === 'default' ? '1' : r === undefined ? 'not run (see prefix-in-flight)' : `${r.toFixed(2)}x`;
      console.log(`| ${name} | ${p50.toFixed(2)} | ${diff} | ${ratio} |`);
    }
    const cpu = lines.find((l) => l.event === 'cpu-16-in-flight')?.us_per_request as Record<string, Record<string, number>> | undefined;
    if (cpu) {
      const parties = ['driver', 'router-thread', 'service', 'replicas'];
      console.log(`\n| 16 in flight: CPU µs per request | ${parties.join(' | ')} | sum (the router thread is in the driver) |`);
      console.log(`|---|${parties.map(() => '---|').join('')}---|`);
      for (const [name, us] of Object.entries(cpu)) {
        const sum = parties.reduce((a, p) => a + (p === 'router-thread' ? 0 : us[p] ?? 0), 0);
        console.log(`| ${name} | ${parties.map((p) => (us[p] ?? NaN).toFixed(0)).join(' | ')} | ${sum.toFixed(0)} |`);
      }
    }
    if (prefix) console.log(`4 in flight, req/s: ${JSON.stringify(prefix.req_per_s)}`);
    const load = lines.filter((l) => l.event === 'load').map((l) => l.loadavg.map((x: number) => x.toFixed(1)).join('/'));
    console.log(`load average (1/5/15 min) at start and end: ${load.join(', ')}`);
    console.log('targets: sequential at most +1.00 ms, 16 in flight at least 0.90x (on a quiet 2-core machine)');
  } finally {
    await service.stop();
  }
}

await main();
