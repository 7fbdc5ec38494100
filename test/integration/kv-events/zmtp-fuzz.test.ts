/**
 * A hostile KV-event publisher at the transport level (issue 15), seeded so a failure reproduces:
 * a TCP server at a worker's `kv_events_endpoint` answers each connection of the service's
 * subscriber with a damaged ZMTP stream — bytes that are no greeting, a greeting with a bad
 * signature, version or mechanism, a READY from a socket that is no PUB, frame headers with
 * reserved bits or sizes of petabytes, commands of megabytes, frames cut off, messages of the
 * wrong shape, batches naming a rank the worker does not have — then hangs up. The service reads
 * past or resets each one, counts it, keeps answering selections and keeps its catalog; nothing
 * of the garbage reaches the index; and a well-behaved session after the noise is applied.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { seededRng } from '../../../src/core/random.js';
import { seqFrame } from '../../../src/service/kv-events/frames.js';
import { stringifyJson } from '../../../src/core/wire/json.js';
import { batch, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { counters, dumpedBlocks, kvService, rankOverlaps, until, workerBody } from '../../support/kv-service.js';
import { eventually, unboundIpcEndpoint } from '../../support/ports.js';

const SESSIONS = 30;
const SEED = 20261515;
const rng = seededRng(SEED);
const int = (n: number): number => Math.floor(rng.next() * n);
const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));

/** A ZMTP 3.0 greeting (NULL mechanism, not as-server), optionally damaged at byte `at`. */
function greeting(damage?: { at: number; value: number }): Buffer {
  const g = Buffer.alloc(64);
  g[0] = 0xff; g[9] = 0x7f; g[10] = 3; g[11] = 0;
  g.write('NULL', 12, 'latin1');
  if (damage) g[damage.at] = damage.value;
  return g;
}

/** A short command frame. */
const command = (body: Buffer): Buffer => Buffer.concat([Buffer.from([0x04, body.length]), body]);

/** READY with a Socket-Type. */
function ready(type: string): Buffer {
  const name = Buffer.from('\x05READY', 'latin1');
  const prop = Buffer.concat([Buffer.from('\x0bSocket-Type', 'latin1'), Buffer.from([0, 0, 0, type.length]), Buffer.from(type, 'latin1')]);
  return command(Buffer.concat([name, prop]));
}

/** A message of short frames. */
const message = (frames: Buffer[]): Buffer =>
  Buffer.concat(frames.map((f, i) => Buffer.concat([Buffer.from([i < frames.length - 1 ? 0x01 : 0x00, f.length]), f])));

/** A long frame header declaring `size` bytes (flags: long, plus `more`). */
function longHeader(size: bigint, more = false): Buffer {
  const h = Buffer.alloc(9);
  h[0] = 0x02 | (more ? 0x01 : 0);
  h.writeBigUInt64BE(size, 1);
  return h;
}

const HELLO = (): Buffer => Buffer.concat([greeting(), ready('PUB')]);
const TOPIC = Buffer.from('kv-events');
let seq = 0n;
/** A batch for a rank worker 1 does not have (index-neutral even if it got through). */
const strangerBatch = (): Buffer => message([TOPIC, seqFrame(seq++), batch([storedEvent([BigInt(7000 + int(100))], null, tokenRange(1, 16))], 7)]);

/** One damaged session. */
function session(): Buffer {
  switch (int(11)) {
    case 0: return bytes(1 + int(200));
    case 1: return greeting({ at: [0, 9][int(2)], value: int(255) });
    case 2: return greeting({ at: 10, value: int(3) }); // ZMTP 1.x/2.x
    case 3: return Buffer.concat([greeting({ at: 12, value: 0x50 /* PLAIN */ })]);
    case 4: return Buffer.concat([greeting(), ready(['REQ', 'SUB', 'ROUTER', ''][int(4)])]);
    case 5: return Buffer.concat([HELLO(), longHeader(1n << BigInt(50 + int(12)))]);
    case 6: return Buffer.concat([HELLO(), Buffer.from([0x04 | 0x02]), Buffer.alloc(8, 0x7f)]); // a huge command
    case 7: return Buffer.concat([HELLO(), message([TOPIC, bytes(int(12)), bytes(int(64))]).subarray(0, 5 + int(40))]); // cut off
    case 8: return Buffer.concat([HELLO(), message(Array.from({ length: [1, 2, 4, 6][int(4)] }, () => bytes(int(30))))]);
    case 9: return Buffer.concat([HELLO(), strangerBatch(), strangerBatch()]);
    default: return Buffer.concat([greeting(), command(Buffer.concat([Buffer.from('\x05READY', 'latin1'), bytes(int(20))]))]); // bad properties
  }
}

test(`zmtp fuzz: ${SESSIONS} damaged publisher sessions (seed ${SEED}) are counted; the service serves on; nothing is indexed`, async (t) => {
  const service = await kvService();
  const sockets = new Set<Socket>();
  let sessions = 0;
  let good: Buffer | null = null;
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    s.on('data', () => {}); // the subscriber's greeting, READY and SUBSCRIBE
    if (good !== null) { s.write(Buffer.concat([HELLO(), good])); return; } // stays open: a publisher at last
    sessions++;
    s.end(session());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    await service.shutdown();
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  const addr = server.address();
  const endpoint = `tcp://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  service.upsertWorker(workerBody(1, { kv_events_endpoint: endpoint }));
  service.upsertWorker(workerBody(2, { kv_events_endpoint: unboundIpcEndpoint(t) })); // a second worker, never connected
  // the records without their live feed counters (kv_events)
  const records = (): string => stringifyJson(service.listWorkers().map(({ kv_events: _feeds, ...r }) => r));
  const catalog = records();

  await eventually(() => sessions >= SESSIONS, 60_000, `${SESSIONS} sessions`);
  const P = tokenRange(1000, 32);
  assert.equal((await service.select({ model_name: 'm', token_ids: P })).overlap.gpu, 0, 'serving all along, nothing indexed');
  const c = counters(service, 1);
  assert.ok(c.protocolErrors > 0, `protocol errors counted: ${c.protocolErrors}`);
  assert.ok(c.droppedFrames.unknownRank > 0 && c.droppedFrames.frameCount > 0, `stranger ranks and bad shapes counted: ${stringifyJson(c.droppedFrames)}`);
  assert.equal(c.applyErrors, 0);
  assert.deepEqual(dumpedBlocks(service), [], 'none of the garbage reached the index');

  // a well-behaved publisher at the same address: its message is applied
  good = message([TOPIC, seqFrame(1n << 40n), batch([storedEvent([900n, 901n], null, P)], 0)]);
  await until(service, 1, (x) => x.batchesApplied === 1, 'the valid batch after the noise');
  assert.deepEqual(rankOverlaps(service, P), { '1:0': [2, 2], '2:0': [0, 0] });
  assert.equal(records(), catalog, 'the catalog is as it was');
});
