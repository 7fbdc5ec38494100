/**
 * A fake inference engine's KV-event side, over real ZMQ sockets on 127.0.0.1: the PUB that
 * vLLM binds (an XPUB here, so a test can wait until a subscriber has actually subscribed — the
 * ZMQ slow-joiner problem), and optionally the replay ROUTER, answering `["", start_seq]` from a
 * ring of every batch ever "published" in either reply shape of the wire note.
 */
import * as zmq from 'zeromq';
import { seqFrame } from '../../src/service/kv-events/frames.js';
import { eventually, releasePort, reservedPort } from './ports.js';

const END = Buffer.alloc(8, 0xff);
const EMPTY = Buffer.alloc(0);

/** `3`: `["", seq, payload]` (vLLM <= 0.25, SGLang); `4`: `["", topic, seq, payload]` (vLLM 0.26). */
export type ReplayShape = 3 | 4;

export class FakeEngine {
  private pub!: zmq.XPublisher;
  private router: zmq.Router | null = null;
  /** The bound PUB endpoint (`tcp://127.0.0.1:<port>`, a {@link reservedPort}: kept across {@link stop} and {@link resume}). */
  endpoint = '';
  private port = 0;
  replayEndpoint: string | null = null;
  /** Subscriptions seen since the PUB was (re)bound. */
  subscriptions = 0;
  /** Replay requests answered. */
  replayRequests = 0;
  private readonly ring: { seq: bigint; topic: string; payload: Buffer }[] = [];
  private closed = false;

  private constructor(private readonly replayShape: ReplayShape | null) {}

  /**
   * Binds the PUB on a reserved 127.0.0.1 port (nobody else can take the address while the
   * engine is stopped, so a subscriber retrying it meets this engine or nothing) and the ROUTER,
   * when `replayShape` is given, on an ephemeral one.
   */
  static async start(replayShape: ReplayShape | null = null): Promise<FakeEngine> {
    const e = new FakeEngine(replayShape);
    e.port = await reservedPort();
    await e.bindPub(`tcp://127.0.0.1:${e.port}`);
    if (replayShape !== null) {
      e.router = new zmq.Router({ linger: 0 });
      await e.router.bind('tcp://127.0.0.1:*');
      e.replayEndpoint = e.router.lastEndpoint;
      void e.serveReplay(e.router);
    }
    return e;
  }

  private async bindPub(endpoint: string): Promise<void> {
    this.pub = new zmq.XPublisher({ linger: 0, sendHighWaterMark: 0 });
    this.pub.verbosity = 'allSubs';
    await this.pub.bind(endpoint);
    this.endpoint = this.pub.lastEndpoint as string;
    this.subscriptions = 0;
    void this.countSubscriptions(this.pub);
  }

  private async countSubscriptions(pub: zmq.XPublisher): Promise<void> {
    try {
      for await (const [msg] of pub) if (msg[0] === 1) this.subscriptions++;
    } catch { /* closed */ }
  }

  /** Resolves once `n` subscribers subscribed since the last (re)bind. */
  waitForSubscribers(n = 1): Promise<void> {
    return eventually(() => this.subscriptions >= n, 10_000, `${n} subscriber(s) at ${this.endpoint}`);
  }

  /** Records a batch in the replay ring and sends it live unless `live` is false (a subscriber that missed it). */
  async publish(seq: number | bigint, payload: Uint8Array, opts: { topic?: string; live?: boolean } = {}): Promise<void> {
    const topic = opts.topic ?? 'kv-events';
    this.ring.push({ seq: BigInt(seq), topic, payload: Buffer.from(payload) });
    if (opts.live !== false) await this.pub.send([topic, seqFrame(BigInt(seq)), payload]);
  }

  /** Sends raw frames on the PUB (bad traffic). */
  async sendRaw(frames: (Uint8Array | string)[]): Promise<void> { await this.pub.send(frames); }

  /** A new publisher process at the same address: the PUB is re-bound and the history restarts. */
  async restart(): Promise<void> {
    this.stop();
    await this.resume();
  }

  /** The publisher process goes away: the PUB closes (its address is kept for {@link resume}). */
  stop(): void {
    this.pub.close();
    this.ring.length = 0;
  }

  /** A publisher process at the address of the stopped one: the PUB is bound there again. */
  async resume(): Promise<void> {
    const at = this.endpoint;
    // ZMQ releases the port in its I/O thread after close() (later on a busy machine): retry
    // the bind until it is free. Nobody else binds a reserved port, so it comes free for us.
    const end = Date.now() + 30_000;
    for (;;) {
      try {
        await this.bindPub(at);
        return;
      } catch (err) {
        this.pub.close();
        if ((err as { code?: string }).code !== 'EADDRINUSE' || Date.now() > end) throw err;
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  }

  private async serveReplay(router: zmq.Router): Promise<void> {
    try {
      for await (const [identity, delimiter, start, ...rest] of router) {
        if (this.closed) return;
        if (delimiter?.length !== 0 || start?.length !== 8 || rest.length > 0) continue; // vLLM answers nothing
        this.replayRequests++;
        const from = start.readBigUInt64BE();
        const reply = (topic: string | Buffer, seq: Buffer, payload: Buffer) =>
          router.send(this.replayShape === 4 ? [identity, EMPTY, topic, seq, payload] : [identity, EMPTY, seq, payload]);
        for (const b of this.ring) if (b.seq >= from) await reply(b.topic, seqFrame(b.seq), b.payload);
        await reply(EMPTY, END, EMPTY);
      }
    } catch { /* closed */ }
  }

  close(): void {
    this.closed = true;
    this.pub.close();
    this.router?.close();
    releasePort(this.port);
  }
}
