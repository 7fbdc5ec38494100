/**
 * The engines of the ingestion benchmark, on their own thread (so publishing does not eat the
 * service's thread): one XPUB per worker on 127.0.0.1, sending that worker's pre-encoded batches
 * as `[topic, seq, payload]` as fast as the subscriber takes them. `noDrop` turns the high-water
 * mark into back-pressure instead of loss, so the run measures the sustainable rate with no gaps.
 *
 * Protocol with the main thread: -> {endpoints}, -> 'subscribed', then per phase (warm-up, measured):
 * <- 'go', -> {ms}; finally <- 'stop'.
 */
import { seqFrame } from '../src/service/kv-events/frames.js';
import { parentPort, workerData } from 'node:worker_threads';
import * as zmq from 'zeromq';

const { data, ends, split } = workerData as { data: Uint8Array[]; ends: Uint32Array[]; split: number[] };
const port = parentPort as NonNullable<typeof parentPort>;

const pubs = data.map(() => new zmq.XPublisher({ linger: 0, sendHighWaterMark: 0 }));
const subscribed = pubs.map(() => false);
for (const p of pubs) await p.bind('tcp://127.0.0.1:*');
port.postMessage({ endpoints: pubs.map((p) => p.lastEndpoint) });
pubs.forEach((p, i) => void (async () => { for await (const [m] of p) if (m[0] === 1) subscribed[i] = true; })().catch(() => {}));
while (!subscribed.every(Boolean)) await new Promise((r) => setTimeout(r, 5));
port.postMessage('subscribed');
const message = (): Promise<unknown> => new Promise((resolve) => port.once('message', resolve));

/** Sends batches [from[w], to[w]) of every engine, round-robin (engines run concurrently in a real deployment). */
async function phase(from: number[], to: number[]): Promise<void> {
  const most = Math.max(...to.map((t, w) => t - from[w]));
  for (let k = 0; k < most; k++) {
    for (let w = 0; w < pubs.length; w++) {
      const i = from[w] + k;
      if (i >= to[w]) continue;
      await pubs[w].send(['kv-events', seqFrame(BigInt(i)), data[w].subarray(i === 0 ? 0 : ends[w][i - 1], ends[w][i])]);
    }
  }
}

const zero = split.map(() => 0), all = ends.map((e) => e.length);
for (const [from, to] of [[zero, split], [split, all]]) {
  await message();
  const t0 = performance.now();
  await phase(from, to);
  port.postMessage({ ms: performance.now() - t0 });
}
await message();
for (const p of pubs) p.close();
