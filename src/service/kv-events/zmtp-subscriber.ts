/**
 * A ZeroMQ SUB peer of our own: one TCP (or Unix-socket) connection to an engine's PUB, speaking
 * ZMTP 3.0 (https://rfc.zeromq.org/spec/23/) with the NULL mechanism, subscribed to every topic.
 *
 * Why not a libzmq SUB per rank: every libzmq socket costs a mailbox descriptor on top of its
 * connection, and the context caps sockets at 1,023 by default, so 10,000 ranks need 20,000+
 * descriptors (this machine's hard limit is 20,000). Here a rank costs exactly its connection,
 * the connection state is known first-hand (the KV-feed health needs it), and the receive
 * queue is bounded in messages and bytes with TCP back-pressure behind it (a full queue pauses
 * the socket; the publisher's own high-water mark then drops, which shows as a sequence gap —
 * what a full libzmq SUB queue does too).
 *
 * Wire (all integers big-endian):
 *   greeting   %xFF 8*%x00 %x7F, version 3.0, mechanism "NULL" (20 bytes, zero-padded),
 *              as-server 0, 31 zero bytes                                    = 64 bytes
 *   command    flags %x04 (| %x02 long), size (1 or 8 bytes), name-len, name, properties
 *              READY carries `Socket-Type` = "SUB" (ours) / "PUB" or "XPUB" (theirs)
 *   message    frames: flags (%x01 more, %x02 long), size (1 or 8 bytes), body
 *   subscribe  one frame %x01 followed by the topic prefix (empty: every topic), the ZMTP 3.0
 *              form, which libzmq's PUB accepts from peers of every version
 * A message larger than `maxMessageBytes` is read past without being kept, and counted.
 */
import { connect, type Socket } from 'node:net';
import { validateZmqEndpoint } from '../zmq-endpoint.js';

/** Transport state of one subscriber. */
export type TransportState = 'connecting' | 'connected' | 'disconnected' | 'error';

export interface ZmtpSubscriberOptions {
  /** Messages above this many bytes (all frames) are skipped and reported to `onOversize`. */
  maxMessageBytes: number;
  /** Receive queue bounds; at either the socket is paused until the consumer catches up. */
  queueMessages: number;
  queueBytes: number;
  /** First reconnect delay, doubled on every failed attempt up to `reconnectMaxMs`. */
  reconnectMs?: number;
  reconnectMaxMs?: number;
  /** Every state change, with the reason of a failure (`ENOTFOUND host`, `ECONNREFUSED`, ...). */
  onState?(state: TransportState, reason: string | null): void;
  /** A skipped oversize message. */
  onOversize?(bytes: number): void;
  /** The peer broke the protocol (bad greeting, wrong socket type, malformed frame); the connection is reset. */
  onProtocolError?(reason: string): void;
}

const GREETING_BYTES = 64;

/**
 * Message bodies of at least {@link POOL_MIN_BYTES} come from a pool of power-of-two buffers
 * shared by every subscriber (all on the one thread) and go back through
 * {@link ZmtpSubscriber.release} once the listener is done with them. Without it each KV-event
 * batch (tens of kB) was a fresh ArrayBuffer: its external memory set off a full GC every few
 * tens of MiB, and the copy into it paid first-touch costs (bench/RESULTS.md, second pass).
 * Smaller bodies come from Node's own buffer slab. The pool keeps at most
 * {@link POOL_CLASS_BYTES} per size class; bigger bodies than {@link POOL_MAX_BYTES} are never pooled.
 */
const POOL_MIN_BYTES = 4096, POOL_MAX_BYTES = 4 * 1024 * 1024, POOL_CLASS_BYTES = 8 * 1024 * 1024;
const pool = new Map<number, ArrayBuffer[]>();
/** Buffers handed out and not yet back (a foreign or doubly released buffer is ignored). */
const lent = new WeakSet<ArrayBuffer>();

function poolClass(size: number): number { return 2 ** Math.ceil(Math.log2(size)); }

/** A body of `size` bytes (contents undefined). */
function bodyBuffer(size: number): Buffer {
  if (size < POOL_MIN_BYTES || size > POOL_MAX_BYTES) return Buffer.allocUnsafe(size);
  const cls = poolClass(size);
  const ab = pool.get(cls)?.pop() ?? new ArrayBuffer(cls);
  lent.add(ab);
  return Buffer.from(ab, 0, size);
}

/** Gives a body back to the pool (no-op for one that did not come from it). */
function releaseBody(b: Uint8Array): void {
  const ab = b.buffer as ArrayBuffer;
  if (!lent.delete(ab)) return;
  let free = pool.get(ab.byteLength);
  if (free === undefined) { free = []; pool.set(ab.byteLength, free); }
  if ((free.length + 1) * ab.byteLength <= POOL_CLASS_BYTES) free.push(ab);
}
/** The one buffer every subscriber's reads land in (reads are synchronous, one at a time). */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);
const FLAG_MORE = 0x01, FLAG_LONG = 0x02, FLAG_COMMAND = 0x04;
/** Errors that mean the endpoint cannot work as written (its host does not resolve, ...), not that the peer is down. */
const ENDPOINT_ERRORS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EACCES', 'EINVAL', 'EADDRNOTAVAIL', 'EMFILE', 'ENFILE']);

const OUR_GREETING = ((): Buffer => {
  const g = Buffer.alloc(GREETING_BYTES);
  g[0] = 0xff; g[9] = 0x7f; g[10] = 3; g[11] = 0;
  g.write('NULL', 12, 'latin1');
  return g;
})();

/** READY with Socket-Type SUB, then a subscription to every topic. */
const OUR_HANDSHAKE = ((): Buffer => {
  const body = Buffer.concat([
    Buffer.from([5]), Buffer.from('READY', 'latin1'),
    Buffer.from([11]), Buffer.from('Socket-Type', 'latin1'), Buffer.from([0, 0, 0, 3]), Buffer.from('SUB', 'latin1'),
  ]);
  return Buffer.concat([Buffer.from([FLAG_COMMAND, body.length]), body, Buffer.from([0x00, 1, 0x01])]);
})();

type Target = { kind: 'tcp'; host: string; port: number } | { kind: 'ipc'; path: string };

/** Where a `tcp://host:port` or `ipc://path` endpoint connects (validated first); throws otherwise. */
export function connectTarget(endpoint: string): Target {
  const reason = validateZmqEndpoint(endpoint);
  if (reason !== null) throw new Error(reason);
  const at = endpoint.indexOf('://');
  const scheme = endpoint.slice(0, at), addr = endpoint.slice(at + 3);
  if (scheme === 'ipc') return { kind: 'ipc', path: addr };
  if (scheme !== 'tcp') throw new Error(`unsupported scheme \`${scheme}\` for a KV-event subscriber`);
  const colon = addr.lastIndexOf(':');
  let host = addr.slice(0, colon);
  if (host.startsWith('[')) host = host.slice(1, -1);
  if (host === '*') throw new Error('cannot connect to a wildcard host');
  return { kind: 'tcp', host, port: Number(addr.slice(colon + 1)) };
}

export class ZmtpSubscriber {
  readonly endpoint: string;
  private readonly target: Target;
  private socket: Socket | null = null;
  private stateNow: TransportState = 'connecting';
  private reason: string | null = null;
  /** Where the handshake is: our greeting sent, theirs awaited; READY awaited; then messages. */
  private phase: 'greeting' | 'ready' | 'messages' = 'greeting';
  /** The frame being read: its header (flags and size bytes) and its body as far as it came. */
  private readonly header = Buffer.alloc(9);
  private headerHave = 0;
  private body: Buffer | null = null;
  private bodyHave = 0;
  private bodySize = 0;
  /** Body bytes of an oversize message's frame still to read past (nothing kept). */
  private skipLeft = 0;
  /** Set from a frame over the limit to the end of its message. */
  private skippingMessage = false;
  private skippedBytes = 0;
  private frames: Buffer[] = [];
  private messageBytes = 0;
  private readonly queue: Buffer[][] = [];
  private queueHead = 0;
  private queuedBytes = 0;
  private waiter: { resolve(m: Buffer[]): void; reject(e: Error): void } | null = null;
  private closed = false;
  private everConnected = false;
  private failures = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private paused = false;

  /** Starts connecting at once (and keeps reconnecting until closed); throws for an endpoint it cannot connect to. */
  constructor(endpoint: string, private readonly o: ZmtpSubscriberOptions) {
    this.endpoint = endpoint;
    this.target = connectTarget(endpoint);
    this.dial();
  }

  get state(): TransportState { return this.stateNow; }
  /** Why the last connection attempt failed or dropped (null while connected). */
  get lastError(): string | null { return this.reason; }

  /** The next message (its frames); rejects once the subscriber is closed. */
  receive(): Promise<Buffer[]> {
    if (this.queueHead < this.queue.length) return Promise.resolve(this.shift());
    if (this.closed) return Promise.reject(new Error('subscriber closed'));
    return new Promise((resolve, reject) => { this.waiter = { resolve, reject }; });
  }

  /**
   * The frames of a message received from this subscriber are no longer used (nor any view of
   * them): their memory may carry the next messages. Optional; a frame never released is garbage
   * collected as usual.
   */
  release(frames: readonly Uint8Array[]): void {
    for (const f of frames) releaseBody(f);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.socket?.destroy();
    this.socket = null;
    this.queue.length = 0;
    this.queueHead = 0;
    const w = this.waiter;
    this.waiter = null;
    w?.reject(new Error('subscriber closed'));
  }

  private setState(s: TransportState, reason: string | null): void {
    this.reason = reason;
    if (s === this.stateNow && s !== 'error') return;
    this.stateNow = s;
    this.o.onState?.(s, reason);
  }

  private dial(): void {
    if (this.closed) return;
    this.retryTimer = null;
    this.phase = 'greeting';
    this.headerHave = this.bodyHave = this.bodySize = this.skipLeft = this.skippedBytes = this.messageBytes = 0;
    this.body = null;
    this.skippingMessage = false;
    this.frames = [];
    const t = this.target;
    // Reads land in one reused buffer (`onread`): no allocation per read and no stream machinery;
    // each kept frame is copied out once, into a buffer of its exact size.
    const onread = { buffer: READ_BUFFER, callback: (n: number, buf: Uint8Array): boolean => this.onData(s, buf, n) };
    const s: Socket = t.kind === 'tcp' ? connect({ host: t.host, port: t.port, onread }) : connect({ path: t.path, onread });
    this.socket = s;
    this.paused = false;
    s.setNoDelay(true);
    s.setKeepAlive(true, 30_000);
    s.on('connect', () => s.write(OUR_GREETING));
    s.on('error', (err: NodeJS.ErrnoException) => { this.reason = describe(err, t); });
    s.on('close', () => this.onClose(s));
  }

  private onClose(s: Socket): void {
    if (this.socket !== s) return;
    this.socket = null;
    if (this.closed) return;
    const reason = this.reason ?? 'connection closed by the peer';
    const code = /^(\w+)/.exec(reason)?.[1] ?? '';
    if (ENDPOINT_ERRORS.has(code)) this.setState('error', reason);
    else if (this.stateNow === 'connected' || (this.everConnected && this.stateNow !== 'disconnected')) this.setState('disconnected', reason);
    else this.reason = reason;
    const base = this.o.reconnectMs ?? 100, max = this.o.reconnectMaxMs ?? 5000;
    const wait = Math.min(base * 2 ** Math.min(this.failures++, 16), max);
    this.retryTimer = setTimeout(() => this.dial(), wait);
    this.retryTimer.unref?.();
  }

  /** One read: `n` bytes in `buf` (valid only during this call). Returns false to pause the socket. */
  private onData(s: Socket, buf: Uint8Array, n: number): boolean {
    if (this.socket !== s) return false;
    try {
      this.consume(s, buf, n);
    } catch (err) {
      this.o.onProtocolError?.((err as Error).message);
      this.reason = `protocol error: ${(err as Error).message}`;
      s.destroy();
      return false;
    }
    return !this.paused;
  }

  /** The ZMTP state machine over one read: greeting, then frames (header, then body). */
  private consume(s: Socket, buf: Uint8Array, n: number): void {
    let at = 0;
    while (at < n) {
      if (this.skipLeft > 0) {
        const k = Math.min(this.skipLeft, n - at);
        at += k;
        this.skipLeft -= k;
        if (this.skipLeft === 0) this.frameSkipped();
        continue;
      }
      if (this.body !== null) {
        const k = Math.min(this.bodySize - this.bodyHave, n - at);
        this.body.set(buf.subarray(at, at + k), this.bodyHave);
        at += k;
        this.bodyHave += k;
        if (this.bodyHave === this.bodySize) this.bodyDone(s);
        continue;
      }
      if (this.phase === 'greeting') {
        // the greeting is read into `body` like a frame
        this.body = Buffer.allocUnsafe(GREETING_BYTES);
        this.bodySize = GREETING_BYTES;
        this.bodyHave = 0;
        continue;
      }
      // a frame header: flags, then a 1- or 8-byte size
      this.header[this.headerHave++] = buf[at++];
      const long = (this.header[0] & FLAG_LONG) !== 0;
      if (this.headerHave < (long ? 9 : 2)) continue;
      this.headerHave = 0;
      this.startFrame(long ? this.longSize() : this.header[1]);
    }
  }

  private longSize(): number {
    const h = this.header;
    const hi = h.readUInt32BE(1), lo = h.readUInt32BE(5);
    if (hi >= 2 ** 21) throw new Error('frame size beyond 2^53 bytes');
    return hi * 2 ** 32 + lo;
  }

  /** A frame header is complete: keep its body, or read past it when its message is over the limit. */
  private startFrame(size: number): void {
    const flags = this.header[0];
    if ((flags & FLAG_COMMAND) === 0) {
      if (this.phase !== 'messages') throw new Error('message frame before READY');
      if (this.skippingMessage || this.messageBytes + size > this.o.maxMessageBytes) {
        this.skippingMessage = true;
        this.skippedBytes += this.messageBytes + size;
        this.messageBytes = 0;
        this.frames = [];
        this.skipLeft = size;
        if (size === 0) this.frameSkipped();
        return;
      }
    } else if (size > 1 << 20) throw new Error(`a ${size}-byte command`);
    this.body = bodyBuffer(size);
    this.bodySize = size;
    this.bodyHave = 0;
    if (size === 0) this.bodyDone(null);
  }

  /** The last body byte of a skipped frame went by. */
  private frameSkipped(): void {
    if ((this.header[0] & FLAG_MORE) !== 0) return;
    this.skippingMessage = false;
    this.o.onOversize?.(this.skippedBytes);
    this.skippedBytes = 0;
  }

  private bodyDone(s: Socket | null): void {
    const body = this.body as Buffer;
    this.body = null;
    if (this.phase === 'greeting') {
      if (body[0] !== 0xff || body[9] !== 0x7f) throw new Error('not a ZMTP peer (bad greeting signature)');
      if (body[10] < 3) throw new Error(`ZMTP ${body[10]}.x is not supported (3.x needed)`);
      if (body.toString('latin1', 12, 32).replace(/\0+$/, '') !== 'NULL') throw new Error('the peer wants a security mechanism other than NULL');
      this.phase = 'ready';
      s?.write(OUR_HANDSHAKE);
      return;
    }
    const flags = this.header[0];
    if ((flags & FLAG_COMMAND) !== 0) {
      if (this.phase === 'ready') this.onReady(body);
      // later commands (PING and the like, ZMTP 3.1) carry nothing a SUB needs
      return;
    }
    this.frames.push(body);
    this.messageBytes += body.length;
    if ((flags & FLAG_MORE) === 0) {
      const m = this.frames;
      const bytes = this.messageBytes;
      this.frames = [];
      this.messageBytes = 0;
      this.deliver(m, bytes);
    }
  }

  private onReady(body: Buffer): void {
    const nameLen = body[0];
    if (body.toString('latin1', 1, 1 + nameLen) !== 'READY') throw new Error('expected READY');
    let at = 1 + nameLen, type = '';
    while (at < body.length) {
      const n = body[at];
      const name = body.toString('latin1', at + 1, at + 1 + n);
      const vlen = body.readUInt32BE(at + 1 + n);
      if (name.toLowerCase() === 'socket-type') type = body.toString('latin1', at + 5 + n, at + 5 + n + vlen);
      at += 5 + n + vlen;
    }
    if (type !== 'PUB' && type !== 'XPUB') throw new Error(`the peer is a ${type || 'socket of unknown type'}, not a PUB`);
    this.phase = 'messages';
    this.failures = 0;
    this.everConnected = true;
    this.setState('connected', null);
  }

  private deliver(m: Buffer[], bytes: number): void {
    const w = this.waiter;
    if (w) { this.waiter = null; w.resolve(m); return; }
    this.queue.push(m);
    this.queuedBytes += bytes;
    if (!this.paused && (this.queue.length - this.queueHead >= this.o.queueMessages || this.queuedBytes >= this.o.queueBytes)) {
      this.paused = true; // the read callback returns false: the socket stops reading
    }
  }

  private shift(): Buffer[] {
    const m = this.queue[this.queueHead++];
    for (const f of m) this.queuedBytes -= f.length;
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) { this.queue.splice(0, this.queueHead); this.queueHead = 0; }
    if (this.paused && this.queue.length - this.queueHead < this.o.queueMessages / 2 && this.queuedBytes < this.o.queueBytes / 2) {
      this.paused = false;
      this.socket?.resume();
    }
    return m;
  }
}

/** `ECONNREFUSED 127.0.0.1:5557`, `ENOTFOUND nosuchhost.invalid`, ... */
function describe(err: NodeJS.ErrnoException, t: Target): string {
  const where = t.kind === 'tcp' ? `${t.host}:${t.port}` : t.path;
  return `${err.code ?? 'ERROR'} ${where}${err.code ? '' : `: ${err.message}`}`;
}
