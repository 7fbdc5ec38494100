/**
 * `--workers-file PATH`: a discovery source that keeps the catalog equal to a JSON file (an
 * array of worker records, the body of `POST /workers` each).
 *
 * Each new snapshot of the file is applied as upserts of its records, then deletes of the
 * workers the previous snapshots brought in and this one no longer lists. Workers registered
 * any other way (HTTP) are never deleted by the file. A snapshot is validated whole before
 * anything changes (JSON, every record against the worker schema, no duplicate ids, and the
 * service's own checks of each record: `--allowed-endpoints`, room for a new partition), so a
 * bad file changes nothing. A snapshot whose apply fails is retried after 5 s (the product rule)
 * unless a newer snapshot arrives first; a transient failure part-way through (the service
 * shutting down, say) leaves the upserts already done and the retry re-applies the whole file.
 *
 * Change detection: `fs.watch` on the file's directory, where any event triggers a check (a
 * `stat` through symlinks, then a read only if it changed), plus a stat poll, because watch events
 * are not delivered on every file system. Any event, not only those naming the file: editors
 * rename over it, and a Kubernetes ConfigMap volume never touches it at all (`workers.json` is a
 * symlink to `..data/workers.json`; kubelet updates by renaming a new `..data` symlink over the
 * old one).
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LIMITS } from '../core/config/config.js';
import { SelectionError } from '../core/errors.js';
import { WorkerRequestSchema, describeIssues } from '../core/wire/schemas.js';
import { parseJson } from '../core/wire/json.js';
import type { Logger } from './logger.js';

/** What discovery needs of the service. */
export interface CatalogTarget {
  /** Throws what `upsertWorker` would, without changing anything (optional). */
  checkWorker?(req: unknown): void;
  upsertWorker(req: unknown): unknown;
  deleteWorker(workerId: bigint): unknown;
}

/** Options of {@link WorkersFileDiscovery}. */
export interface WorkersFileOptions {
  path: string;
  target: CatalogTarget;
  logger: Logger;
  /** Delay before a failed snapshot is retried (default 5 s, `LIMITS.discoveryRetryMs`). */
  retryMs?: number;
  /** Stat poll interval (default 1 s). */
  pollMs?: number;
}

/** Counters, for logs and tests. */
export interface DiscoveryStats { applied: number; failed: number; retries: number; lastError: string | null }

/** One validated snapshot: each raw record (the service validates it again) with its id. */
export interface Snapshot { entries: { id: bigint; record: unknown }[]; ids: Set<bigint> }

/** Parses and validates a whole file; throws an Error listing every problem. */
export function parseWorkersFile(text: string): Snapshot {
  let doc: unknown;
  try { doc = parseJson(text); } catch (err) { throw new Error(`not valid JSON: ${(err as Error).message}`); }
  if (!Array.isArray(doc)) throw new Error('expected a JSON array of worker records');
  const problems: string[] = [];
  const s: Snapshot = { entries: [], ids: new Set() };
  doc.forEach((record, i) => {
    const r = WorkerRequestSchema.safeParse(record);
    if (!r.success) { problems.push(`record ${i}: ${describeIssues(r.error)}`); return; }
    const id = r.data.worker_id;
    if (s.ids.has(id)) problems.push(`record ${i}: duplicate worker_id ${id}`);
    s.ids.add(id);
    s.entries.push({ id, record });
  });
  if (problems.length > 0) throw new Error(problems.join('; '));
  return s;
}

/** Keeps the catalog equal to a workers file (see the file header); `start()`, then `close()`. */
export class WorkersFileDiscovery {
  private readonly path: string;
  private readonly retryMs: number;
  private readonly pollMs: number;
  /** Workers the file brought in (only these are deleted when it stops listing them). */
  private readonly owned = new Set<bigint>();
  private readonly counters: DiscoveryStats = { applied: 0, failed: 0, retries: 0, lastError: null };
  private lastStat = '';
  private lastText: string | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pollTimer: ReturnType<typeof setInterval> | null = null;
  private watcher: FSWatcher | null = null;
  private running = false;
  private again = false;
  private forceAgain = false;
  private closed = false;
  private idle: Promise<void> = Promise.resolve();

  constructor(private readonly o: WorkersFileOptions) {
    this.path = o.path;
    this.retryMs = o.retryMs ?? LIMITS.discoveryRetryMs;
    this.pollMs = o.pollMs ?? 1000;
  }

  get stats(): Readonly<DiscoveryStats> { return { ...this.counters }; }

  /** Applies the current file (failures are logged and retried, never thrown), then watches it. */
  async start(): Promise<void> {
    this.trigger(false);
    await this.idle;
    try {
      this.watcher = watch(dirname(this.path), () => this.trigger(false));
      this.watcher.on('error', (err) => this.o.logger.debug({ err: err.message }, 'workers file watch failed; polling only'));
    } catch (err) {
      this.o.logger.debug({ err: (err as Error).message }, 'cannot watch the workers file directory; polling only');
    }
    this.pollTimer = setInterval(() => this.trigger(false), this.pollMs);
    this.pollTimer.unref();
  }

  /** Stops watching, polling and retrying. */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  /** Runs one check now or after the one in progress (checks never overlap). */
  private trigger(force: boolean): void {
    if (this.closed) return;
    if (this.running) { this.again = true; this.forceAgain ||= force; return; }
    this.running = true;
    this.idle = (async () => {
      let f = force;
      do {
        this.again = false;
        await this.check(f);
        f = this.forceAgain;
        this.forceAgain = false;
      } while (this.again && !this.closed);
      this.running = false;
    })();
  }

  /** Reads the file if it changed (or `force`, for a retry) and applies it as a snapshot. */
  private async check(force: boolean): Promise<void> {
    let text: string;
    try {
      const st = await stat(this.path);
      const key = `${st.ino}:${st.size}:${st.mtimeMs}`;
      if (!force && key === this.lastStat) return;
      this.lastStat = key;
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if (!force && this.lastStat === 'missing') return;
      this.lastStat = 'missing';
      return this.failed(new Error(`cannot read: ${(err as Error).message}`));
    }
    if (!force && text === this.lastText) return;
    this.lastText = text;
    // A newer snapshot supersedes the pending retry of an older one.
    if (this.retryTimer) { clearTimeout(this.retryTimer); this.retryTimer = null; }
    try {
      const n = this.apply(parseWorkersFile(text));
      this.counters.applied++;
      this.counters.lastError = null;
      this.o.logger.info({ path: this.path, ...n }, 'workers file applied');
    } catch (err) {
      this.failed(err as Error);
    }
  }

  /** Checks every record, upserts them, then deletes the file's workers it no longer lists. */
  private apply(s: Snapshot): { workers: number; deleted: number } {
    s.entries.forEach(({ record }, i) => {
      try {
        this.o.target.checkWorker?.(record);
      } catch (err) {
        throw new Error(`record ${i}: ${(err as Error).message}`);
      }
    });
    for (const { id, record } of s.entries) {
      this.o.target.upsertWorker(record);
      this.owned.add(id);
    }
    let deleted = 0;
    for (const id of [...this.owned]) {
      if (s.ids.has(id)) continue;
      try {
        this.o.target.deleteWorker(id);
        deleted++;
      } catch (err) {
        // Already gone (deleted over HTTP): nothing to do. Anything else fails the snapshot.
        if (!(err instanceof SelectionError && err.status === 404)) throw err;
      }
      this.owned.delete(id);
    }
    return { workers: s.ids.size, deleted };
  }

  private failed(err: Error): void {
    this.counters.failed++;
    this.counters.lastError = err.message;
    this.o.logger.warn({ path: this.path, err: err.message, retryInMs: this.retryMs }, 'workers file snapshot not applied');
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.counters.retries++;
      this.trigger(true);
    }, this.retryMs);
    this.retryTimer.unref();
  }
}
