/**
 * The lingering close (src/http/lingering-close.ts) on raw sockets against a real server on
 * 127.0.0.1: an answer given before the body was read carries `Connection: close`, the client can
 * go on sending and read it; the rest of the body is read up to the drain's byte limit and for at
 * most its time limit (a drain cut at a limit is warned about and counted in the service's
 * metrics); a request pipelined behind such an answer is never run; answers after a complete
 * request keep the connection.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { createServer, selectionApi, type ServerOptions } from '../../../src/http/app.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { eventually } from '../../support/ports.js';
import { value } from '../../support/prom-text.js';

const MiB = 1024 * 1024;
const TOKEN = 'Bearer drain-test-token';

interface Served {
  port: number;
  /** The server's log lines (JSON, warn and above). */
  logs: string[];
  service: SelectionService;
  connections(): Promise<number>;
  /** A raw client to this server: `send` on its port, destroyed before the server closes. */
  send(head: string, bodyBytes: number, o?: { stallAfter?: number; tail?: string }): Raw;
}

/** A listening server with the API behind a bearer token. */
async function serve(t: TestContext, opts: ServerOptions): Promise<Served> {
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  const logs: string[] = [];
  const app = createServer({ logger: { level: 'warn', stream: { write: (line) => { logs.push(line); } } }, ...opts });
  await app.register(selectionApi, { service, auth: { verify: (h) => h === TOKEN } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const clients: Raw[] = [];
  t.after(async () => {
    for (const c of clients) c.socket.destroy(); // else close() would wait for a socket a failed test left open
    await app.close();
    await service.shutdown();
  });
  const addr = app.server.address();
  const connections = (): Promise<number> => new Promise((resolve, reject) => {
    app.server.getConnections((err, n) => (err ? reject(err) : resolve(n)));
  });
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    port, logs, service, connections,
    send(h, bodyBytes, o) { const c = send(port, h, bodyBytes, o); clients.push(c); return c; },
  };
}

/** A raw client: `sent` counts body bytes the socket accepted; `failed` is the write error, if any. */
interface Raw { socket: Socket; received(): string; sent(): number; failed(): string | null; done: Promise<void> }

/**
 * Connects (half-open allowed, so it keeps sending after the server's FIN, as a client that does
 * not read while it writes does), writes `head`, then `bodyBytes` bytes of `x` (or stops after
 * `stallAfter` of them), then `tail`. `done` resolves once everything is written or writing failed.
 */
function send(port: number, head: string, bodyBytes: number, o: { stallAfter?: number; tail?: string } = {}): Raw {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let received = '';
  let sent = 0;
  let failed: string | null = null;
  socket.on('data', (d: Buffer) => { received += d.toString('latin1'); });
  const done = new Promise<void>((resolve) => {
    socket.on('error', (e: NodeJS.ErrnoException) => { failed = e.code ?? e.message; resolve(); });
    socket.write(head);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const until = o.stallAfter ?? bodyBytes;
    const pump = (): void => {
      while (sent < until) {
        if (socket.destroyed) return;
        const n = Math.min(chunk.length, until - sent);
        sent += n;
        if (!socket.write(chunk.subarray(0, n))) { socket.once('drain', pump); return; }
      }
      if (o.stallAfter !== undefined) return;
      if (o.tail) socket.write(o.tail);
      resolve();
    };
    pump();
  });
  return { socket, received: () => received, sent: () => sent, failed: () => failed, done };
}

/** `select_service_http_drains_cut_total` of the service, by limit. */
async function drainCuts(s: Served): Promise<{ bytes: number | undefined; time: number | undefined }> {
  const { text } = await s.service.metrics();
  const cuts = (limit: string): number | undefined => value(text, 'select_service_http_drains_cut_total', { limit });
  return { bytes: cuts('bytes'), time: cuts('time') };
}

const head = (path: string, length: number, headers = ''): string =>
  `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${headers}\r\n`;

/** The status, headers and JSON body of the first response in `raw`. */
function firstAnswer(raw: string): { status: number; headers: string; body: unknown } {
  const end = raw.indexOf('\r\n\r\n');
  assert.ok(end > 0, `a response arrived: ${JSON.stringify(raw.slice(0, 200))}`);
  const headers = raw.slice(0, end);
  const length = Number(/content-length: (\d+)/i.exec(headers)?.[1]);
  return { status: Number(headers.split(' ')[1]), headers, body: JSON.parse(raw.slice(end + 4, end + 4 + length)) };
}

test('an oversized body: the client sends all of it and reads 413 {"error"} with connection: close; then the socket closes', async (t) => {
  const s = await serve(t, {});
  const size = 9 * MiB;
  const c = s.send(head('/select', size, `authorization: ${TOKEN}\r\n`), size);
  await c.done;
  assert.equal(c.failed(), null, 'every byte of the body was accepted');
  assert.equal(c.sent(), size);
  await eventually(() => c.received().includes('}'), 30_000, 'the answer');
  const a = firstAnswer(c.received());
  assert.equal(a.status, 413);
  assert.match(a.headers, /\r\nconnection: close\r\n/i);
  assert.deepEqual(a.body, { error: 'Failed to buffer the request body: length limit exceeded' });
  await eventually(async () => (await s.connections()) === 0, 30_000, 'the server closes the socket once the body has arrived');
});

test('the drain reads at most its byte limit after the answer, then closes', async (t) => {
  const s = await serve(t, { drainLimits: { bytes: 1 * MiB, ms: 120_000 } });
  const size = 256 * MiB; // far more than the socket buffers hold
  const c = s.send(head('/select', size, `authorization: ${TOKEN}\r\n`), size);
  await c.done;
  assert.ok(c.failed() !== null, 'the server closed while the client was still sending');
  assert.ok(c.sent() < size, `the client could not send it all (${c.sent()} of ${size} bytes)`);
  assert.equal(firstAnswer(c.received()).status, 413, 'the answer arrived first');
  await eventually(() => s.logs.some((l) => /"overBytes":1,"overTime":0/.test(l)), 30_000, 'the cut drain is warned about');
  assert.deepEqual(await drainCuts(s), { bytes: 1, time: 0 }, 'and counted');
});

test('the drain waits at most its time limit for a client that stops sending', async (t) => {
  const s = await serve(t, { drainLimits: { bytes: 64 * MiB, ms: 200 } });
  const c = s.send(head('/select', 9 * MiB, `authorization: ${TOKEN}\r\n`), 9 * MiB, { stallAfter: 1024 });
  await eventually(() => c.received().includes('}'), 30_000, 'the answer');
  assert.equal(firstAnswer(c.received()).status, 413);
  // without the time limit the socket would stay open as long as the client keeps it
  await eventually(async () => (await s.connections()) === 0, 30_000, 'the server closes the stalled socket');
  assert.ok(s.logs.some((l) => /"overBytes":0,"overTime":1/.test(l)), `the cut drain is warned about:\n${s.logs.join('')}`);
  assert.deepEqual(await drainCuts(s), { bytes: 0, time: 1 }, 'and counted');
});

test('a request pipelined behind an early 401 is never run', async (t) => {
  const s = await serve(t, {});
  const worker = '{"worker_id":1,"model_name":"m","endpoint":"http://w","block_size":4}';
  const pipelined = `${head('/workers', worker.length, `authorization: ${TOKEN}\r\n`)}${worker}`;
  const c = s.send(head('/workers', 2 * MiB), 2 * MiB, { tail: pipelined });
  await c.done;
  await eventually(async () => (await s.connections()) === 0, 30_000, 'the server closes the socket');
  const a = firstAnswer(c.received());
  assert.equal(a.status, 401);
  assert.match(a.headers, /\r\nconnection: close\r\n/i);
  assert.equal(c.received().split('HTTP/1.1 ').length - 1, 1, 'one answer only');
  assert.equal(s.service.listWorkers().length, 0, 'the pipelined registration did not run');
});

test('answers after the whole request keep the connection: a 422 and a 200 on one socket', async (t) => {
  const s = await serve(t, {});
  const bad = '{"worker_id":1,"model_name":"m","endpoint":"http://w","block_size":"four"}';
  const health = 'GET /health HTTP/1.1\r\nhost: x\r\n\r\n';
  const c = s.send(`${head('/workers', bad.length, `authorization: ${TOKEN}\r\n`)}${bad}${health}`, 0);
  await eventually(() => c.received().split('HTTP/1.1 ').length - 1 === 2 && c.received().endsWith('}'), 30_000, 'both answers');
  const answers = c.received().split(/(?=HTTP\/1\.1 )/);
  assert.deepEqual(answers.map((r) => firstAnswer(r).status), [422, 200]);
  for (const r of answers) assert.doesNotMatch(firstAnswer(r).headers, /connection: close/i);
  assert.equal(await s.connections(), 1, 'the connection is still open');
});
