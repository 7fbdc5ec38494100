/**
 * The KV-event transport alone: a publisher thread sends `--messages` messages of `--bytes`
 * bytes (`[topic, seq, payload]`, vLLM's shape) as fast as the subscriber takes them, to
 * (a) libzmq's SUB (zeromq.js), which reads and frames in its own I/O thread, and
 * (b) the service's ZMTP subscriber, which reads and frames on the main thread.
 * Reported per transport: wall time, the main thread's time not idle in the event loop (a loop
 * fed without pause never idles, so this overstates work), and the process's CPU time over all
 * threads (the fair cost: libzmq's I/O thread counts there); the runs alternate (a, b, a, b, ...)
 * so machine noise hits both alike.
 *
 *   node build/dist/bench/kv-transport.bench.js [--messages=8000] [--bytes=35000] [--rounds=3]
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import * as zmq from 'zeromq';
import { ZmtpSubscriber } from '../src/service/kv-events/zmtp-subscriber.js';
import { seqFrame } from '../src/service/kv-events/frames.js';

interface Args { messages: number; bytes: number; rounds: number }

function args(): Args {
  const get = (name: string, d: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? d);
  return { messages: get('messages', 8000), bytes: get('bytes', 35000), rounds: get('rounds', 3) };
}

/** Publisher thread: one XPUB; on each 'go' it sends the messages and reports. */
async function publisher(): Promise<void> {
  const { messages, bytes } = workerData as Args;
  const port = parentPort as NonNullable<typeof parentPort>;
  const payload = Buffer.alloc(bytes, 0x5a);
  const pub = new zmq.XPublisher({ linger: 0, sendHighWaterMark: 0 });
  pub.verbosity = 'allSubs'; // count every subscriber's subscription, not only the first of a topic
  await pub.bind('tcp://127.0.0.1:*');
  let subs = 0;
  void (async () => { for await (const [m] of pub) if (m[0] === 1) subs++; })().catch(() => {});
  port.postMessage({ endpoint: pub.lastEndpoint });
  for (;;) {
    const cmd = await new Promise<{ go?: number; stop?: boolean }>((r) => port.once('message', r));
    if (cmd.stop) break;
    while (subs < (cmd.go as number)) await new Promise((r) => setTimeout(r, 2));
    for (let i = 0; i < messages; i++) await pub.send(['kv-events', seqFrame(BigInt(i)), payload]);
    port.postMessage({ sent: messages });
  }
  pub.close();
}

type Receive = { receive(): Promise<Buffer[]>; close(): void };

interface Run { wallMs: number; busyMs: number; cpuMs: number }

async function measure(make: () => Receive, n: number, worker: Worker, round: number): Promise<Run> {
  const sub = make();
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  worker.postMessage({ go: round });
  let bytes = 0;
  for (let i = 0; i < n; i++) bytes += (await sub.receive())[2].length;
  const wallMs = performance.now() - t0;
  const elu = performance.eventLoopUtilization(elu0);
  const cpu = process.cpuUsage(cpu0);
  sub.close();
  await new Promise((r) => worker.once('message', r));
  if (bytes === 0) throw new Error('nothing received');
  return { wallMs, busyMs: elu.active, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function main(): Promise<void> {
  const a = args();
  const worker = new Worker(new URL(import.meta.url), { workerData: a });
  const { endpoint } = await new Promise<{ endpoint: string }>((r) => worker.once('message', r));
  const mib = (a.messages * a.bytes) / 2 ** 20;
  const transports: [string, () => Receive][] = [
    ['libzmq SUB (zeromq.js)', () => { const s = new zmq.Subscriber({ linger: 0, receiveHighWaterMark: 100_000 }); s.connect(endpoint); s.subscribe(); return s; }],
    ['ZMTP subscriber (service)', () => new ZmtpSubscriber(endpoint, { maxMessageBytes: 64 << 20, queueMessages: 128, queueBytes: 4 << 20 })],
  ];
  const results = new Map<string, Run[]>();
  let round = 0;
  for (let r = 0; r < a.rounds; r++) {
    for (const [name, make] of transports) {
      const m = await measure(make, a.messages, worker, ++round);
      results.set(name, [...(results.get(name) ?? []), m]);
    }
  }
  worker.postMessage({ stop: true });
  const med = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  console.log(`### KV-event transport: ${a.messages} messages of ${a.bytes} bytes (${mib.toFixed(0)} MiB), ${a.rounds} alternating rounds, medians\n`);
  console.log('| transport | wall ms | MiB/s | main thread not idle, ms | process CPU ms (all threads, publisher included) |');
  console.log('|---|---|---|---|---|');
  for (const [name, ms] of results) {
    const wall = med(ms.map((m) => m.wallMs)), busy = med(ms.map((m) => m.busyMs)), cpu = med(ms.map((m) => m.cpuMs));
    console.log(`| ${name} | ${wall.toFixed(0)} | ${(mib / (wall / 1000)).toFixed(0)} | ${busy.toFixed(0)} | ${cpu.toFixed(0)} |`);
  }
}

if (isMainThread) await main(); else await publisher();
