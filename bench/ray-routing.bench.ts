/**
 * `npm run bench -- ray-routing`: routing quality in a real Ray Serve (issue 27, item 4). The same
 * trace through the same fake engine (a per-replica prefix cache, the simulator's step-time
 * profile, queueing and decode; vLLM KV events over ZMQ) behind SelectServiceRouter (a service fed
 * by the replicas' KV events, and one in approximate mode), Ray 2.58's PrefixCacheAffinityRouter
 * and Serve's default router, all in one Ray session and at the same time
 * (bench/ray_routing_bench.py in the Ray venv of scripts/ray-venv.sh). Prints a markdown table:
 * TTFT at the replica and at the driver, prefix-cache hit rate, and each router's overhead
 * against the default router's in the same run.
 *
 * It starts a Ray session (16 replicas, 5 driver processes; about 100 s and 3 GB with the defaults):
 * one Ray session per machine at a time (`flock LOCKFILE npm run bench -- ray-routing` on a shared one).
 * `--policy=NAME[:k=v...]` starts both services with that `--routing-policy`; every other
 * argument (the `=` form) passes to the Python bench: `--requests=N`, `--rate=R`,
 * `--time-scale=S`, `--workload=mooncake`, `--routers=a,b`, `--max-routing=ray-prefix=N`, ...
 * (`.cache/ray-venv/bin/python bench/ray_routing_bench.py --help` lists them).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PROFILE, perfProfile } from '../src/sim/perf-model.js';
import { startService, type ServiceProcess } from '../test/support/service-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const PYTHON = join(root, '.cache/ray-venv/bin/python');

type Row = Record<string, any>;

/** Runs the Python bench; resolves with its JSON lines (stderr, Ray's logs, goes to ours). */
async function runBench(args: string[], env: Record<string, string>): Promise<Row[]> {
  const child = spawn(PYTHON, [join(root, 'bench/ray_routing_bench.py'), ...args], {
    cwd: root, env: { ...process.env, ...env, PYTHONUNBUFFERED: '1' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const rows: Row[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    if (!line.startsWith('{')) continue;
    const row = JSON.parse(line) as Row;
    rows.push(row);
    if (row.event !== 'router') console.log(line.length > 400 ? `${line.slice(0, 400)}...` : line);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`ray_routing_bench.py exited with ${code}`);
  return rows;
}

const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : '-');
const signed = (v: number): string => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(1)}` : '-');

/** The markdown table of the routers' rows (bench/ray_routing_report.py names the fields). */
function table(routers: Row[]): string[] {
  const base = routers.find((r) => r.router === 'default');
  const lines = [
    '| router | TTFT at replica p50 / p90 / p99 (model ms) | p90 vs default | TTFT at driver p50 / p90 (wall ms) | hit rate | overhead vs default (ms) | zero-cost request vs default (ms) | replicas busy | requests per replica | errors |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of routers) {
    if (r.stalled) { lines.push(`| ${r.router} | stalled: ${r.stalled} | | | | | | | | all |`); continue; }
    const t = r.ttft_replica_ms;
    const ratio = base && !base.stalled ? `${(t.p90 / base.ttft_replica_ms.p90).toFixed(2)}x` : '-';
    lines.push(`| ${r.router} | ${ms(t.p50)} / ${ms(t.p90)} / ${ms(t.p99)} | ${ratio} | ${ms(r.ttft_driver_ms.p50)} / ${ms(r.ttft_driver_ms.p90)} `
      + `| ${r.hit_rate.toFixed(3)} | ${signed(r.overhead_vs_default_ms)} | ${signed(r.probe_vs_default_ms)} `
      + `| ${r.busy.join(' ')} | ${r.requests_per_replica.join(' ')} | ${r.errors} |`);
  }
  return lines;
}

async function main(): Promise<void> {
  if (!existsSync(PYTHON)) {
    console.log('ray-routing bench: no Ray venv at .cache/ray-venv; run scripts/ray-venv.sh first');
    return;
  }
  const argv = process.argv.slice(2);
  const policy = argv.find((a) => a.startsWith('--policy='))?.slice('--policy='.length);
  const pass = argv.filter((a) => !a.startsWith('--policy='));
  const serviceArgs = policy ? ['--routing-policy', policy] : [];
  const profile = perfProfile(DEFAULT_PROFILE);
  const load0 = os.loadavg()[0];
  const started = new Date();
  const services: ServiceProcess[] = [];
  try {
    services.push(await startService(serviceArgs, { DYN_ROUTER_USE_KV_EVENTS: 'true' }));
    services.push(await startService(serviceArgs, { DYN_ROUTER_USE_KV_EVENTS: 'false' }));
    const rows = await runBench(['--profile', JSON.stringify(profile.cost), ...pass], {
      SELECT_SERVICE_KV_URL: services[0].url, SELECT_SERVICE_URL: services[1].url,
    });
    const config = rows.find((r) => r.event === 'config');
    const routers = rows.filter((r) => r.event === 'router');
    for (const r of routers) console.log(JSON.stringify(r));
    const a = config?.args ?? {};
    console.log(`\n${started.toISOString()}, ${((Date.now() - started.getTime()) / 1000).toFixed(0)} s, load average `
      + `${load0.toFixed(1)} -> ${os.loadavg()[0].toFixed(1)} (${os.cpus().length} CPUs); command: npm run bench -- ray-routing ${argv.join(' ')}`);
    console.log(`workload ${a.workload}, ${a.requests} requests, rate ${a.rate}/model s, ${a.replicas} replicas per router, `
      + `time scale ${a.time_scale}, profile ${profile.name}, block ${a.block_size}, capacity ${a.capacity_blocks} blocks, `
      + `routing policy ${policy ?? 'the service default'}, max routing ${a.max_routing}\n`);
    for (const line of table(routers)) console.log(line);
  } finally {
    await Promise.all(services.map((s) => s.stop()));
  }
}

await main();
