/**
 * The replica mesh's receiving side: one ZMQ SUB per peer endpoint (Dynamo uses one SUB connected
 * to every peer; the wire is the same), so each message is known to come from one endpoint, in
 * that peer's order, and each endpoint's connection state is known (the ZMTP handshake done, or
 * disconnected), for `/ready` and the peer gauge.
 *
 * Socket options: reconnect from 100 ms backing off to 1 s and a connect timeout of 1 s (a peer
 * back from a restart or a cut network is reconnected within about a second), ZMTP heartbeats
 * every second with a 3 s timeout (a cut connection is dropped and remade rather than left to
 * TCP's retransmission backoff), and the receive queue limit `--replica-sync-receive-hwm`.
 */
import * as zmq from 'zeromq';
import type { Logger } from './logger.js';

/** Largest message accepted (ZMQ_MAXMSGSIZE): a larger frame drops the peer's connection instead of being buffered. */
export const REPLICA_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Options both ends of the mesh set (the PUB too). */
export const MESH_SOCKET_OPTIONS = {
  linger: 0, reconnectInterval: 100, reconnectMaxInterval: 1000, connectTimeout: 1000, tcpKeepalive: 1,
  heartbeatInterval: 1000, heartbeatTimeout: 3000, heartbeatTimeToLive: 3000,
} as const;

export interface PeerSocketsOptions {
  topics: readonly string[];
  receiveHwm: number;
  logger: Logger;
  /** A message from `endpoint`, in that peer's order. */
  onMessage(endpoint: string, frames: Buffer[]): void;
}

interface Peer { readonly sub: zmq.Subscriber; connected: boolean; loop: Promise<void> | null }

export class PeerSockets {
  private readonly peers = new Map<string, Peer>();
  private closed = false;

  constructor(private readonly o: PeerSocketsOptions) {}

  /** Connects a SUB to `endpoint` (already validated); false when it is there already. */
  add(endpoint: string): boolean {
    if (this.peers.has(endpoint) || this.closed) return false;
    const sub = new zmq.Subscriber({
      ...MESH_SOCKET_OPTIONS, receiveTimeout: -1, maxMessageSize: REPLICA_MAX_MESSAGE_BYTES, receiveHighWaterMark: this.o.receiveHwm,
    });
    const peer: Peer = { sub, connected: false, loop: null };
    sub.events.on('handshake', () => { peer.connected = true; });
    sub.events.on('disconnect', () => { peer.connected = false; });
    for (const t of this.o.topics) sub.subscribe(t);
    sub.connect(endpoint);
    this.peers.set(endpoint, peer);
    peer.loop = this.receive(endpoint, peer);
    return true;
  }

  /** Closes the SUB of `endpoint`; false when it was not there. */
  remove(endpoint: string): boolean {
    const p = this.peers.get(endpoint);
    if (!p) return false;
    this.peers.delete(endpoint);
    p.sub.close();
    return true;
  }

  has(endpoint: string): boolean { return this.peers.has(endpoint); }

  list(): string[] { return [...this.peers.keys()].sort(); }

  /** Whether the connection to `endpoint` has completed its handshake and not dropped since. */
  connected(endpoint: string): boolean { return this.peers.get(endpoint)?.connected ?? false; }

  private async receive(endpoint: string, peer: Peer): Promise<void> {
    while (!this.closed && this.peers.get(endpoint) === peer) {
      let frames: Buffer[];
      try {
        frames = await peer.sub.receive();
      } catch (err) {
        if (this.closed || peer.sub.closed) return;
        this.o.logger.debug({ err, endpoint }, 'replica sync receive failed; retrying');
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      this.o.onMessage(endpoint, frames);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const loops = [...this.peers.values()].map((p) => { p.sub.close(); return p.loop; });
    this.peers.clear();
    await Promise.all(loops.map((l) => l?.catch(() => {})));
  }
}
