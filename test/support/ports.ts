/**
 * Addresses on this machine that a test can count on, and {@link eventually}.
 *
 * No test may rely on a port staying unused after a listener on it closed (a "free port"): the
 * other test file running meanwhile, another suite on the machine, or the kernel handing the
 * port to an outgoing connection can take it at any moment (an outgoing connection to 127.0.0.1
 * whose own ephemeral port is the one it dials even connects to itself: TCP's simultaneous
 * open). So listen on port 0 / bind `tcp://127.0.0.1:*` and read what you got wherever that is
 * accepted, and otherwise take an address here:
 * - {@link reservedPort}: a number to pass where 0 is refused (`--replica-sync-port`), to name
 *   a peer before it starts, to bind again after a restart, or where nothing may listen;
 * - {@link unboundIpcEndpoint}: a ZMQ endpoint where no publisher is, nor can be;
 * - {@link silentTcpEndpoint}: a peer that accepts connections and never says a word.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type After = { after(fn: () => void | Promise<void>): void };

/**
 * Ports the kernel never picks by itself (for port 0 or an outgoing connection): the ones above
 * its ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range, by default 32768-60999),
 * or below it where the range reaches 65535 (IANA's 49152-65535 elsewhere).
 */
function reservableRange(): [number, number] {
  let lo = 49152, hi = 65535;
  try {
    [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  } catch { /* not Linux: IANA's dynamic range */ }
  return hi <= 64535 ? [hi + 1, 65535] : [Math.max(1024, lo - 4000), lo - 1];
}

/** UDP sockets holding the reservations of this process, by port. */
const tokens = new Map<number, UdpSocket>();

function bindUdp(port: number): Promise<UdpSocket | null> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => { s.close(); resolve(null); });
    s.bind(port, '127.0.0.1', () => resolve(s));
  });
}

function tcpBindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A TCP port of 127.0.0.1 that nothing but this test process binds until {@link releasePort}
 * (or the process's end). Three things make it so: the kernel never hands it out (it lies
 * outside the ephemeral range); every test process takes a port only while holding the UDP port
 * of the same number, which the kernel grants to one socket at a time and frees when the process
 * dies (no stale locks); and the TCP port is checked bindable (nobody outside the suite has it).
 * The port may be bound, closed and bound again, or never bound (then nothing listens there).
 */
export async function reservedPort(): Promise<number> {
  const [from, to] = reservableRange();
  const n = to - from + 1;
  const start = Math.floor(Math.random() * n);
  for (let i = 0; i < n; i++) {
    const port = from + ((start + i) % n);
    if (tokens.has(port)) continue;
    const token = await bindUdp(port);
    if (token === null) continue; // another test process holds it
    if (!(await tcpBindable(port))) { token.close(); continue; }
    token.unref();
    tokens.set(port, token);
    return port;
  }
  throw new Error(`no reservable TCP port left in ${from}-${to}`);
}

/** Gives a {@link reservedPort} back (once nothing of this test binds it any more). */
export function releasePort(port: number): void {
  tokens.get(port)?.close();
  tokens.delete(port);
}

/**
 * `ipc://<a new private directory>/nobody`: a ZMQ endpoint nothing binds (nobody else knows the
 * directory), so a subscriber there keeps connecting. The directory is removed after the test.
 */
export function unboundIpcEndpoint(t: After): string {
  const dir = mkdtempSync(join(tmpdir(), 'select-service-unbound-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return `ipc://${join(dir, 'nobody')}`;
}

/**
 * `tcp://127.0.0.1:<port>` of a listener this test holds that accepts every connection and never
 * writes a byte (no ZMTP greeting, no HTTP answer); closed after the test.
 */
export async function silentTcpEndpoint(t: After): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return `tcp://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/**
 * Established TCP connections whose remote end is `port` on this machine (any process), from
 * /proc/net/tcp and tcp6; null where those cannot be read (not Linux).
 */
export function connectionsTo(port: number): number | null {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { return null; }
    for (const line of text.split('\n').slice(1)) {
      const [, , remote, state] = line.trim().split(/\s+/);
      if (state === '01' && remote?.endsWith(`:${hex}`)) n++; // 01: ESTABLISHED
    }
  }
  return n;
}

/**
 * Waits until no connection to `port` is left (a ZMQ disconnect takes effect in the I/O thread,
 * later on a busy machine); where connections cannot be seen (not Linux), waits half a second.
 */
export async function untilDisconnected(port: number, timeoutMs = 15_000): Promise<void> {
  if (connectionsTo(port) === null) { await new Promise((r) => setTimeout(r, 500)); return; }
  await eventually(() => connectionsTo(port) === 0, timeoutMs, `every connection to port ${port} closed`);
}

/**
 * Polls `check` until it returns true (or throws after `timeoutMs`): every 10 ms, or after four
 * times as long as the check itself took, so that an expensive check (a snapshot of 10,000
 * ranks takes ~100 ms on a busy machine) holds at most a fifth of the event loop and leaves the
 * rest to the work it waits for.
 */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const t0 = performance.now();
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, Math.max(10, 4 * (performance.now() - t0))));
  }
}
