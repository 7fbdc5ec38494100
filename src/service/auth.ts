/**
 * Bearer tokens of `--auth-token-file` (README "Security"): one token per line; blank lines and
 * lines starting with `#` are skipped, surrounding whitespace is trimmed, a token has no inner
 * whitespace. Several tokens may be valid at once, so a token is rotated by adding the new one,
 * moving clients over, then removing the old one.
 *
 * The file is read again when it changes (a stat poll, so a rename-over write is seen too) and on
 * {@link AuthTokens.reload} (the server calls it on SIGHUP). A version that cannot be read, has no
 * token or a malformed line is refused with a warning and the previous tokens stay in force.
 *
 * Checks are constant-time: the presented token and every valid one are hashed (SHA-256) and
 * compared with `timingSafeEqual`, every valid token each time, so neither the length nor the
 * position of a match shows in the time taken. Tokens are never logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { ConfigError } from '../core/config/config.js';
import type { Logger } from './logger.js';

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();
const BEARER = /^Bearer +(\S+) *$/i;

/** The tokens of a token file's text; throws with the reason it is refused. */
export function parseTokens(text: string): string[] {
  const tokens: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (/\s/.test(line)) throw new Error(`line ${i + 1}: a token has no whitespace inside`);
    tokens.push(line);
  });
  if (tokens.length === 0) throw new Error('no token in the file');
  return tokens;
}

export class AuthTokens {
  private digests: Buffer[] = [];
  private first = '';
  private lastStat = '';
  private timer: ReturnType<typeof setInterval> | null = null;
  private reading: Promise<boolean> = Promise.resolve(true);

  private constructor(readonly path: string, private readonly logger: Logger) {}

  /** Reads the file (ConfigError naming the flag when it is unusable) and starts watching it. */
  static async open(path: string, logger: Logger, pollMs = 1000): Promise<AuthTokens> {
    const a = new AuthTokens(path, logger);
    try {
      a.set(parseTokens(await readFile(path, 'utf8')));
      a.lastStat = await a.statKey();
    } catch (err) {
      throw new ConfigError([`--auth-token-file: ${path}: ${(err as Error).message}`]);
    }
    a.timer = setInterval(() => { void a.poll(); }, pollMs);
    a.timer.unref();
    return a;
  }

  /** Whether an `Authorization` header value is `Bearer <a valid token>`. */
  verify(authorization: string | undefined): boolean {
    const m = authorization === undefined ? null : BEARER.exec(authorization);
    const presented = digest(m ? m[1] : '');
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(presented, d) || ok;
    return ok && m !== null;
  }

  /** The token this service presents to its peers (`--indexer-peers` recovery): the file's first. */
  get outbound(): string { return this.first; }

  /** Number of valid tokens. */
  get size(): number { return this.digests.length; }

  /** Reads the file again now; false (previous tokens kept, a warning logged) when the new version is refused. */
  reload(): Promise<boolean> {
    this.reading = this.reading.then(async () => {
      try {
        this.set(parseTokens(await readFile(this.path, 'utf8')));
        this.lastStat = await this.statKey().catch(() => '');
        this.logger.info({ path: this.path, tokens: this.digests.length }, 'auth tokens loaded');
        return true;
      } catch (err) {
        this.logger.warn({ path: this.path, err: (err as Error).message }, 'auth token file not applied; the previous tokens stay valid');
        return false;
      }
    });
    return this.reading;
  }

  /** Stops watching the file. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private set(tokens: string[]): void {
    this.digests = tokens.map(digest);
    this.first = tokens[0];
  }

  private async statKey(): Promise<string> {
    const st = await stat(this.path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  }

  private async poll(): Promise<void> {
    let key: string;
    try {
      key = await this.statKey();
    } catch {
      key = 'missing';
    }
    if (key === this.lastStat) return;
    this.lastStat = key;
    if (key !== 'missing') await this.reload();
    else this.logger.warn({ path: this.path }, 'auth token file is gone; the previous tokens stay valid');
  }
}
