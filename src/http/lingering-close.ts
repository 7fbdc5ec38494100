/**
 * The lingering close (nginx's name for it): an answer given before the whole request was read
 * (413 over the body limit, 415 and 401 before the body, a 404 or 405 to a request with a body,
 * 408, 400 and 431 of a malformed request) must reach a client that is still sending. Closing the
 * socket at once would reset the connection under the client's writes: Python's urllib and
 * http.client then report a broken pipe and never read the status, curl and Node's fetch
 * sometimes. So such an answer carries `Connection: close`; once it is written the socket's
 * write side is shut (FIN after the answer) and what the client still sends is read and
 * discarded until the request ends or the client closes, at most `LIMITS.drainMaxBytes` (4x the
 * body limit) or for `LIMITS.drainMaxMs` (30 s, the request timeout's default); then the socket
 * is closed. A request that arrives on a closing socket (pipelined, or a body completing after a
 * 408) is never run. A drain cut at a limit is reported (the client may not have read its answer):
 * to the server's log, and to every service mounted on the server for its metrics
 * ({@link lingeringCloseOf}).
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { LIMITS } from '../core/config/config.js';

/** How much of a request is read and discarded after an early answer, and for how long. */
export interface DrainLimits { readonly bytes: number; readonly ms: number }

export const DRAIN_LIMITS: DrainLimits = Object.freeze({ bytes: LIMITS.drainMaxBytes, ms: LIMITS.drainMaxMs });

/** Which limit cut a drain short. */
export type DrainCut = 'bytes' | 'time';

/** A socket that has had its answer: it closes once the client is done, or at a limit. */
interface Drain {
  /** Closes the socket when more than the byte limit arrived since the answer. */
  readonly check: () => void;
  /** Closes the socket (once the answer is written) when `req` ends. */
  follow(req: IncomingMessage): void;
}

/** Whether a request still has body bytes on the wire that nobody read. */
function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The lingering close of each server it is installed on (by the server's Node `http.Server`). */
const byServer = new WeakMap<object, LingeringClose>();

/** The lingering close installed on `server` (a Fastify instance's `server`), if any. */
export function lingeringCloseOf(server: object): LingeringClose | undefined { return byServer.get(server); }

/** The lingering close of one server's sockets. */
export class LingeringClose {
  private readonly closing = new WeakMap<Socket, Drain>();
  private readonly listeners = new Set<(cut: DrainCut) => void>();

  constructor(readonly limits: DrainLimits) {}

  /** `listener` hears of every drain a limit cuts short from now on, until the returned function is called. */
  listen(listener: (cut: DrainCut) => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  /** Whether `socket` has had its answer and closes once drained. */
  isClosing(socket: Socket): boolean { return this.closing.has(socket); }

  /**
   * Shuts the write side of `socket` after what is already written to it (the answer), reads and
   * discards what arrives until `req` ends (when given), the client closes or a limit is reached,
   * then closes it. Called again for the same socket, it only checks the byte limit (and follows
   * `req`). `check` is the byte limit when counting started earlier ({@link byteLimit}).
   */
  closeAfterDrain(socket: Socket, req?: IncomingMessage, check: () => void = this.byteLimit(socket)): void {
    let drain = this.closing.get(socket);
    if (drain === undefined) this.closing.set(socket, drain = this.startDrain(socket, check));
    else drain.check();
    if (req !== undefined) drain.follow(req);
  }

  /**
   * On `app` (and every scope under it): an answer sent while the request's body is still unread
   * gets `Connection: close` and a lingering close instead of Node's immediate one; a request
   * that reaches validation on a closing socket is dropped unanswered (its socket had its answer).
   */
  install(app: FastifyInstance): void {
    byServer.set(app.server, this);
    app.addHook('onSend', (request, reply, payload, done) => {
      const req = request.raw;
      const socket = req.socket as Socket | null;
      if (socket && bodyUnread(req)) {
        reply.header('connection', 'close');
        const check = this.countBody(socket, req);
        // Node ends a `Connection: close` response with socket.destroySoon() once it is written;
        // this socket drains first instead. On a socket that already had its answer (a body
        // still arriving after a 408) this answer goes nowhere and the request's bytes count.
        if (this.closing.has(socket)) this.closeAfterDrain(socket, req);
        else socket.destroySoon = () => this.closeAfterDrain(socket, req, check);
      }
      done(null, payload);
    });
    app.addHook('preValidation', (request, reply, done) => {
      const socket = request.raw.socket as Socket | null;
      if (socket && this.closing.has(socket)) { reply.hijack(); return; }
      done();
    });
  }

  /**
   * A check that destroys `socket` once more than the byte limit arrived after this call. The
   * HTTP parser reads the socket itself (it emits no 'data'), but `bytesRead` counts what it read.
   */
  private byteLimit(socket: Socket): () => void {
    const start = socket.bytesRead;
    return () => {
      if (socket.destroyed || socket.bytesRead - start <= this.limits.bytes) return;
      socket.destroy();
      this.cut('bytes');
    };
  }

  /**
   * Reads `req`'s body from now on, checking the byte limit as it arrives. Reading it here,
   * before the answer is written, also keeps Node from "dumping" it after the answer: the parser
   * discards a dumped request's body without any event to count it by.
   */
  private countBody(socket: Socket, req: IncomingMessage): () => void {
    const check = this.byteLimit(socket);
    req.on('data', check);
    return check;
  }

  private cut(limit: DrainCut): void {
    for (const listener of this.listeners) listener(limit);
  }

  private startDrain(socket: Socket, check: () => void): Drain {
    const close = (): void => { clearTimeout(timer); socket.destroy(); };
    // The answer may still be in Node's buffer: close once it is handed to the kernel.
    const closeWhenWritten = (): void => { if (socket.writableFinished) close(); else socket.once('finish', close); };
    const timer = setTimeout(() => { if (!socket.destroyed) { socket.destroy(); this.cut('time'); } }, this.limits.ms);
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', closeWhenWritten);
    socket.end();
    return {
      check,
      follow(req) {
        if (req.complete) closeWhenWritten();
        else req.once('end', closeWhenWritten);
      },
    };
  }
}

/** What {@link warnCuts} logs to. */
interface WarnLog { warn(fields: object, message: string): void }

/**
 * A {@link LingeringClose.listen} listener that warns once per `everyMs` at most, with how many
 * drains each limit cut since the previous warning (clients sending past their answer are a client's fault, but under heavy
 * load a slow client's answer may be lost, and the operator should see that).
 */
export function warnCuts(log: WarnLog, limits: DrainLimits, everyMs = 60_000, now: () => number = Date.now): (cut: DrainCut) => void {
  const counts: Record<DrainCut, number> = { bytes: 0, time: 0 };
  let warnedAt = -Infinity;
  return (cut) => {
    counts[cut]++;
    const t = now();
    if (t - warnedAt < everyMs) return;
    warnedAt = t;
    log.warn({ overBytes: counts.bytes, overTime: counts.time, limitBytes: limits.bytes, limitMs: limits.ms },
      'closed connections still sending after their early answer (413, 415, 401, 408, ...) at a drain limit: those clients may not have read it');
    counts.bytes = 0;
    counts.time = 0;
  };
}
