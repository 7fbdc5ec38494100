/**
 * The KV-event subscriber (src/service/kv-events/zmtp-subscriber.ts) against libzmq's own PUB
 * (zeromq.js): the ZMTP handshake and subscription, multipart messages, the connection states
 * (connecting, connected, disconnected and back, error for a host that does not resolve), a
 * peer that is not ZMTP, oversize messages read past and counted, and Unix-socket endpoints.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zmq from 'zeromq';
import { ZmtpSubscriber, connectTarget, type TransportState, type ZmtpSubscriberOptions } from '../../../src/service/kv-events/zmtp-subscriber.js';
import { eventually, reservedPort } from '../../support/ports.js';

interface Probe { sub: ZmtpSubscriber; states: [TransportState, string | null][]; oversize: number[]; protocol: string[] }

function subscriber(endpoint: string, o: Partial<ZmtpSubscriberOptions> = {}): Probe {
  const p: Probe = { sub: null as unknown as ZmtpSubscriber, states: [], oversize: [], protocol: [] };
  p.sub = new ZmtpSubscriber(endpoint, {
    maxMessageBytes: 1 << 20, queueMessages: 1000, queueBytes: 1 << 24, reconnectMs: 20, reconnectMaxMs: 100,
    onState: (s, r) => p.states.push([s, r]), onOversize: (n) => p.oversize.push(n), onProtocolError: (r) => p.protocol.push(r),
    ...o,
  });
  return p;
}

/** An XPUB on 127.0.0.1 that counts subscriptions (so a test knows the subscriber is in). */
async function publisher(endpoint = 'tcp://127.0.0.1:*'): Promise<{ pub: zmq.XPublisher; endpoint: string; subs: () => number }> {
  const pub = new zmq.XPublisher({ linger: 0 });
  let subs = 0;
  try {
    await pub.bind(endpoint);
  } catch (err) {
    pub.close();
    throw err;
  }
  void (async () => { try { for await (const [m] of pub) if (m[0] === 1) subs++; } catch { /* closed */ } })();
  return { pub, endpoint: pub.lastEndpoint as string, subs: () => subs };
}

test('endpoints: tcp host:port (IPv6 bracketed) and ipc paths; wildcards, inproc and garbage are refused', () => {
  assert.deepEqual(connectTarget('tcp://127.0.0.1:5557'), { kind: 'tcp', host: '127.0.0.1', port: 5557 });
  assert.deepEqual(connectTarget('tcp://[::1]:5557'), { kind: 'tcp', host: '::1', port: 5557 });
  assert.deepEqual(connectTarget('tcp://gpu-1.example:1'), { kind: 'tcp', host: 'gpu-1.example', port: 1 });
  assert.deepEqual(connectTarget('ipc:///tmp/kv.sock'), { kind: 'ipc', path: '/tmp/kv.sock' });
  assert.throws(() => connectTarget('tcp://*:5557'), /wildcard/);
  assert.throws(() => connectTarget('inproc://x'), /unsupported scheme/);
  assert.throws(() => connectTarget('tcp://host'), /missing port/);
  assert.throws(() => connectTarget('nonsense'), /missing scheme/);
});

test('subscribes to every topic on a libzmq PUB and receives multipart messages in order', async (t) => {
  const { pub, endpoint, subs } = await publisher();
  const p = subscriber(endpoint);
  t.after(() => { p.sub.close(); pub.close(); });
  assert.equal(p.sub.state, 'connecting');
  await eventually(() => subs() === 1, 5000, 'subscribed');
  assert.deepEqual(p.states, [['connected', null]]);
  const big = Buffer.alloc(300_000, 7); // a long frame (8-byte size)
  await pub.send(['kv-events', Buffer.from([0, 0, 0, 0, 0, 0, 0, 1]), Buffer.from('a')]);
  await pub.send(['other-topic', Buffer.alloc(0), big]);
  await pub.send(['', Buffer.from('x')]);
  const m1 = await p.sub.receive(), m2 = await p.sub.receive(), m3 = await p.sub.receive();
  assert.deepEqual(m1.map((f) => f.toString('hex')), ['6b762d6576656e7473', '0000000000000001', '61']);
  assert.equal(m2.length, 3);
  assert.equal(m2[1].length, 0);
  assert.ok(m2[2].equals(big));
  assert.deepEqual(m3.map((f) => f.toString()), ['', 'x']);
});

test('a publisher that goes away turns the subscriber disconnected; it reconnects when the publisher is back', async (t) => {
  // a reserved port: while the publisher is away, nobody else can bind there (nor can the
  // subscriber's own retries connect to themselves), so what answers later is the second one
  const port = await reservedPort();
  const first = await publisher(`tcp://127.0.0.1:${port}`);
  const p = subscriber(first.endpoint);
  t.after(() => p.sub.close());
  await eventually(() => first.subs() === 1, 5000, 'subscribed');
  first.pub.close();
  await eventually(() => p.sub.state === 'disconnected', 5000, 'disconnected');
  assert.match(p.sub.lastError ?? '', /closed by the peer|ECONNRESET|ECONNREFUSED/);
  // the same address again (ZMQ releases the port in its I/O thread: retry the bind)
  let again: Awaited<ReturnType<typeof publisher>> | null = null;
  await eventually(async () => { try { again = await publisher(first.endpoint); return true; } catch { return false; } }, 15_000, 'rebound');
  const second = again as unknown as Awaited<ReturnType<typeof publisher>>;
  t.after(() => second.pub.close());
  await eventually(() => p.sub.state === 'connected' && second.subs() === 1, 5000, 'reconnected');
  await second.pub.send(['t', Buffer.from('after')]);
  assert.equal((await p.sub.receive())[1].toString(), 'after');
  assert.deepEqual(p.states.map(([s]) => s), ['connected', 'disconnected', 'connected']);
});

test('a host that does not resolve is an error at once (and stays one while retrying)', async (t) => {
  const p = subscriber('tcp://nosuchhost.invalid:5557');
  t.after(() => p.sub.close());
  await eventually(() => p.sub.state === 'error', 10_000, 'error state');
  assert.match(p.sub.lastError ?? '', /^(ENOTFOUND|EAI_AGAIN) nosuchhost\.invalid:5557/);
  assert.equal(p.states[0][0], 'error');
});

test('nobody listening: the subscriber keeps connecting (refused attempts are retried, not errors)', async (t) => {
  const p = subscriber(`tcp://127.0.0.1:${await reservedPort()}`); // reserved and never bound: nothing listens
  t.after(() => p.sub.close());
  await eventually(() => /ECONNREFUSED/.test(p.sub.lastError ?? ''), 5000, 'a refused attempt');
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(p.sub.state, 'connecting');
  assert.deepEqual(p.states, []);
});

test('a peer that is not a ZMTP publisher is a protocol error; the connection is reset and retried', async (t) => {
  let connections = 0;
  const server: Server = createServer((s) => { connections++; s.on('error', () => {}); s.end('HTTP/1.1 400 Bad Request\r\n\r\n'.padEnd(80, ' ')); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const p = subscriber(`tcp://127.0.0.1:${(server.address() as { port: number }).port}`);
  t.after(() => { p.sub.close(); server.close(); });
  await eventually(() => p.protocol.length >= 2 && connections >= 2, 5000, 'two protocol errors');
  assert.match(p.protocol[0], /not a ZMTP peer/);
  assert.equal(p.sub.state, 'connecting');
});

test('a peer socket that is not a PUB is refused', async (t) => {
  const rep = new zmq.Reply({ linger: 0 });
  await rep.bind('tcp://127.0.0.1:*');
  const p = subscriber(rep.lastEndpoint as string);
  t.after(() => { p.sub.close(); rep.close(); });
  await eventually(() => p.protocol.length >= 1, 5000, 'protocol error');
  assert.match(p.protocol[0], /the peer is a REP, not a PUB/);
});

test('messages over the size limit are read past and counted; the stream goes on', async (t) => {
  const { pub, endpoint, subs } = await publisher();
  const p = subscriber(endpoint, { maxMessageBytes: 1000 });
  t.after(() => { p.sub.close(); pub.close(); });
  await eventually(() => subs() === 1, 5000, 'subscribed');
  await pub.send(['t', Buffer.alloc(2000)]);                     // one frame over the limit
  await pub.send(['t', Buffer.alloc(600), Buffer.alloc(600)]);    // over the limit only in total
  await pub.send(['t', Buffer.alloc(5_000_000), Buffer.from('tail')]); // a long frame, then more
  await pub.send(['t', Buffer.from('fits')]);
  const m = await p.sub.receive();
  assert.equal(m[1].toString(), 'fits');
  assert.deepEqual(p.oversize, [2001, 1201, 5_000_005]);
  assert.equal(p.sub.state, 'connected');
});

test('ipc:// endpoints connect over a Unix socket', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zmtp-'));
  const { pub, endpoint, subs } = await publisher(`ipc://${join(dir, 'kv.sock')}`);
  const p = subscriber(endpoint);
  t.after(() => { p.sub.close(); pub.close(); rmSync(dir, { recursive: true, force: true }); });
  await eventually(() => subs() === 1, 5000, 'subscribed');
  await pub.send(['t', Buffer.from('over ipc')]);
  assert.equal((await p.sub.receive())[1].toString(), 'over ipc');
});

test('a full receive queue pauses the connection and resumes once drained, in order', async (t) => {
  const { pub, endpoint, subs } = await publisher();
  const p = subscriber(endpoint, { queueMessages: 50 });
  t.after(() => { p.sub.close(); pub.close(); });
  await eventually(() => subs() === 1, 5000, 'subscribed');
  const N = 400; // under libzmq's default send high-water mark (1,000), so nothing is dropped
  for (let i = 0; i < N; i++) await pub.send(['t', Buffer.from(String(i))]);
  await new Promise((r) => setTimeout(r, 100));
  const got: number[] = [];
  for (let i = 0; i < N; i++) got.push(Number((await p.sub.receive())[1].toString()));
  assert.deepEqual(got, Array.from({ length: N }, (_, i) => i));
  p.sub.close();
  await assert.rejects(p.sub.receive(), /closed/);
});

test('released message memory carries later messages; queued and unreleased ones are never overwritten', async (t) => {
  const { pub, endpoint, subs } = await publisher();
  const p = subscriber(endpoint, { queueMessages: 8 });
  t.after(() => { p.sub.close(); pub.close(); });
  await eventually(() => subs() === 1, 5000, 'subscribed');
  // bodies of pooled sizes (4 KiB and up, two size classes), each filled with its own index
  const N = 200, size = (i: number): number => (i % 2 === 0 ? 5000 : 40_000);
  for (let i = 0; i < N; i++) await pub.send(['kv-events', Buffer.alloc(size(i), i & 0xff)]);
  const kept: Buffer[][] = [];
  for (let i = 0; i < N; i++) {
    const m = await p.sub.receive();
    assert.equal(m[1].length, size(i));
    assert.ok(m[1].every((b) => b === (i & 0xff)), `message ${i} intact`);
    if (i % 10 === 0) kept.push(m); // never released: must stay as received
    else p.sub.release(m);
  }
  kept.forEach((m, k) => assert.ok(m[1].every((b) => b === ((10 * k) & 0xff)), `kept message ${10 * k} intact`));
  p.sub.release(kept[0]);
  p.sub.release(kept[0]); // a second release of the same frames is ignored
  p.sub.release([Buffer.alloc(8192)]); // so is memory that did not come from a subscriber
});
