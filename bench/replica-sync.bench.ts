/**
 * What anti-entropy costs (issue 29): three replicas in this process, meshed over real ZeroMQ on
 * 127.0.0.1, holding B live bookings (a third admitted by each). Each phase runs for S seconds
 * and reports, per second over the three replicas: anti-entropy bytes and messages, rows
 * hashed into digests, peers' digests that differed, repairs, and the process's CPU time (ZeroMQ's I/O
 * threads included). Phases:
 * - idle: nothing changes (the cost must stay flat: digests only);
 * - load: R operations a second (bookings and frees, half each, spread over the replicas);
 * each with digests every second (the default) and every 60 s (anti-entropy in effect off: the
 * baseline), in one run, so the difference is what anti-entropy adds. Then the repair itself:
 * a fourth replica joins empty and the time until it holds the B bookings, with the bytes moved.
 *
 *   npm run bench -- replica-sync [--bookings=10000] [--seconds=10] [--ops=200]
 */
import { SelectionServiceBuilder, type SelectionService } from '../src/service/service.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { reservedPort } from '../test/support/ports.js';

const arg = (name: string, d: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? d);
const BOOKINGS = arg('bookings', 10_000), SECONDS = arg('seconds', 10), OPS = arg('ops', 200);
const cfg = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' });
const WORKERS = 16;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function mesh(n: number, digestIntervalMs: number, ports: number[]): Promise<SelectionService[]> {
  const out: SelectionService[] = [];
  for (let i = 0; i < n; i++) {
    const peers = ports.filter((_, j) => j !== i).map((p) => `tcp://127.0.0.1:${p}`);
    const s = await new SelectionServiceBuilder(cfg).replicaSync(ports[i], peers, { digestIntervalMs }).build();
    for (let w = 1; w <= WORKERS; w++) s.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://w${w}`, block_size: 16 });
    out.push(s);
  }
  return out;
}

const rows = (s: SelectionService): number => s.reservations.size();
const prompt = (i: number): number[] => Array.from({ length: 64 }, (_, k) => (i * 64 + k) % 50_000);

async function until(f: () => boolean, ms: number, what: string): Promise<number> {
  const t0 = performance.now();
  while (!f()) {
    if (performance.now() - t0 > ms) throw new Error(`timed out: ${what}`);
    await sleep(20);
  }
  return performance.now() - t0;
}

interface Sample { bytes: number; messages: number; recomputed: number; mismatches: number; repairs: number; cpuMs: number }

function sample(ss: SelectionService[]): Sample {
  let bytes = 0, messages = 0, recomputed = 0, mismatches = 0, repairs = 0;
  for (const s of ss) {
    const m = s.replicaMetrics()!;
    bytes += m.repair.bytesSent;
    messages += m.stats.sent;
    recomputed += m.repair.rowsHashed;
    mismatches += m.repair.digestMismatches;
    repairs += m.repair.added + m.repair.dropped + m.repair.freesResent;
  }
  const cpu = process.cpuUsage();
  return { bytes, messages, recomputed, mismatches, repairs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Runs `seconds` of `ops` operations a second (0: idle) and returns the per-second deltas. */
async function phase(ss: SelectionService[], live: string[], ops: number, seconds: number): Promise<Sample> {
  let next = 0;
  const a = sample(ss);
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let done = 0;
  while (performance.now() < end) {
    if (ops > 0) {
      const due = Math.floor(((performance.now() - t0) / 1000) * ops);
      for (; done < due; done++) {
        const s = ss[done % ss.length];
        if (done % 2 === 0) {
          const id = `op-${next++}`;
          await s.selectAndReserve({ model_name: 'm', selection_id: id, token_ids: prompt(next) });
          live.push(id);
        } else {
          const k = Math.floor(Math.random() * live.length);
          const id = live[k];
          live[k] = live[live.length - 1];
          live.pop();
          // freed on another replica than most bookings were made on
          try { ss[(done + 1) % ss.length].freeReservation(id); } catch { /* not arrived there yet: the free is published all the same */ }
        }
      }
    }
    await sleep(5);
  }
  const b = sample(ss), secs = (performance.now() - t0) / 1000;
  const per = (k: keyof Sample) => (b[k] - a[k]) / secs;
  return { bytes: per('bytes'), messages: per('messages'), recomputed: per('recomputed'), mismatches: per('mismatches'), repairs: per('repairs'), cpuMs: per('cpuMs') };
}

const row = (name: string, s: Sample): string =>
  `| ${name} | ${(s.bytes / 1024).toFixed(1)} KiB | ${s.messages.toFixed(0)} | ${s.recomputed.toFixed(0)} | ${s.mismatches.toFixed(2)} | ${s.repairs.toFixed(2)} | ${s.cpuMs.toFixed(1)} ms |`;

const results: string[] = [];
let joinLine = '';
for (const interval of [1000, 60_000]) {
  const ports = [await reservedPort(), await reservedPort(), await reservedPort()];
  const ss = await mesh(3, interval, ports);
  try {
    await until(() => ss.every((s) => s.ready().ready), 60_000, 'mesh ready');
    const live: string[] = [];
    for (let i = 0; i < BOOKINGS; i++) {
      const id = `b-${i}`;
      await ss[i % 3].selectAndReserve({ model_name: 'm', selection_id: id, token_ids: prompt(i) });
      live.push(id);
      if (i % 500 === 499) await sleep(1); // let the events out
    }
    await until(() => ss.every((s) => rows(s) === BOOKINGS), 60_000, 'every replica holds every booking');
    await sleep(2 * Math.min(interval, 2000)); // settle: the first digests after the bookings
    results.push(row(`idle, digest ${interval / 1000} s`, await phase(ss, live, 0, SECONDS)));
    results.push(row(`${OPS} ops/s, digest ${interval / 1000} s`, await phase(ss, live, OPS, SECONDS)));
    if (interval === 1000) {
      // a fourth replica joins empty: the time until it holds what the others hold, and the bytes that took
      const p4 = await reservedPort();
      const before = sample(ss);
      const t0 = performance.now();
      const d = await new SelectionServiceBuilder(cfg).replicaSync(p4, ports.map((p) => `tcp://127.0.0.1:${p}`), { digestIntervalMs: interval }).build();
      for (let w = 1; w <= WORKERS; w++) d.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://w${w}`, block_size: 16 });
      for (const s of ss) s.registerReplicaPeer(`tcp://127.0.0.1:${p4}`);
      const want = rows(ss[0]);
      await until(() => rows(d) === want, 60_000, 'the new replica holds every booking');
      const took = performance.now() - t0, after = sample(ss);
      joinLine = `a fourth replica joining empty held all ${want} bookings after ${(took / 1000).toFixed(2)} s `
        + `(${((after.bytes - before.bytes) / 2 ** 20).toFixed(2)} MiB of anti-entropy sent by the three to it, ${d.replicaMetrics()!.repair.added} bookings added)`;
      await d.shutdown();
    }
  } finally {
    for (const s of ss) await s.shutdown();
  }
}
console.log(`${BOOKINGS} live bookings, 3 replicas in one process, ${SECONDS} s per phase; per second, summed over the three:`);
console.log('');
console.log('| phase | anti-entropy bytes | mesh messages | rows hashed into digests | peer digests that differed | repairs | process CPU |');
console.log('|---|---|---|---|---|---|---|');
for (const r of results) console.log(r);
console.log('');
console.log(joinLine);
